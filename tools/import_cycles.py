"""Import cycles among the modules of ``app`` and ``connectors`` (issue 9 §6: zero is the goal).

    python -m tools.import_cycles          # print each cycle; exit 1 if there is any

Built on grimp (installed with import-linter). A cycle is a strongly connected component of the
module import graph with more than one module. Every import counts, including those inside functions;
``--runtime`` leaves out imports under ``if TYPE_CHECKING:``, which never run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

import grimp

PACKAGES = ("app", "connectors")


def strongly_connected(nodes: Iterable[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (the graph is small, but recursion depth is not ours to pick)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(edges.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(edges.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def cycles(*, runtime_only: bool = False) -> list[list[str]]:
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=runtime_only)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    return [c for c in strongly_connected(sorted(graph.modules), edges) if len(c) > 1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtime", action="store_true", help="ignore imports under `if TYPE_CHECKING:`")
    args = parser.parse_args(argv)
    found = cycles(runtime_only=args.runtime)
    for component in found:
        print(f"cycle among {len(component)} modules: {', '.join(component)}")
    print(f"{len(found)} import cycle(s) in {', '.join(PACKAGES)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
