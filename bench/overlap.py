"""Pipeline overlap (issue 15 §1-2): every goal's ratio against its baseline, measured in one run.

    python bench/overlap.py [--repeats 2] [--only jira,slack] [--skip latency,embed] [--source-process]

What each section measures, and every option: ``--help``, or the docstring of bench/_overlap.py, which does
the work.
"""

# The work is in bench/_overlap.py. This script imports nothing else at its top: ``--source-process`` starts a
# forkserver that imports the main script once (app.pipeline.source_process), and a main that had numpy in it
# would make every source process pay for numpy's threads after each fork (~0.3 s of CPU, decision 135),
# which no ``harvester`` entry point does.

if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench._overlap import main

    main()
