"""The one pipeline for every mode and connector: enumerate -> transform -> load (seed 001).

Modes differ only by the fetch window (``since``) and by how aggressive the end-of-run resolve is;
see :mod:`app.pipeline.run`.
"""
