"""Two rewrites of the MiniLM graph's float operators, made while the int8 graph is derived (decision 149).

The shipped graph is a ``torch.onnx`` (dynamo) export, and two of its patterns cost a pass more than the
function they compute; onnxruntime's own fusions leave both as they are:

1. **The softmax's NaN guard.** Each layer's attention probabilities pass through ``Where(IsNaN(p), 0, p)``,
   which the exporter adds for rows whose every key is masked. This graph masks a key by adding
   float32's lowest value (-3.4e38), not -inf, so a softmax over finite scores never yields NaN and the
   guard hands its input on unchanged; yet it reads and writes the whole ``[rows, 12, width, width]`` score
   tensor twice a layer: 16 % of a pass of 256 tokens on one core (docs/performance.md). Dropping it gives
   the same bits.
2. **GELU as five operators.** ``x * ((erf(x / sqrt 2) + 1) * 0.5)``: onnxruntime's Gelu fusion looks for
   other orders of these products, so each layer ran Div, Erf, Add, Mul and Mul over ``[rows, width,
   1536]``. onnxruntime's ``Gelu`` (domain ``com.microsoft``) computes the same function in one pass; the
   results differ from the five operators' only in float rounding.

Each rewrite checks the whole pattern, constants included, before it touches a node.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
import onnx
from onnx import helper, numpy_helper

CONTRIB_DOMAIN = "com.microsoft"


class _Graph:
    """Who produces and who consumes each value, and each constant's value."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        self.producer = {out: node for node in graph.node for out in node.output}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for node in graph.node:
            for name in node.input:
                self.consumers.setdefault(name, []).append(node)
        self.initializers = {tensor.name: tensor for tensor in graph.initializer}
        self.outputs = {value.name for value in graph.output}

    def scalar(self, name: str | None) -> float | None:
        """The value of a one-element constant (an initializer or a Constant node), else None."""
        if name is None:
            return None
        tensor = self.initializers.get(name)
        node = self.producer.get(name)
        if tensor is None and node is not None and node.op_type == "Constant" and len(node.attribute) == 1:
            tensor = node.attribute[0].t if node.attribute[0].name == "value" else None
        if tensor is None:
            return None
        array = numpy_helper.to_array(tensor)
        return float(array.reshape(-1)[0]) if array.size == 1 and np.issubdtype(array.dtype, np.floating) else None

    def only_consumer(self, name: str, op_type: str) -> onnx.NodeProto | None:
        found = self.consumers.get(name, [])
        if len(found) != 1 or found[0].op_type != op_type or name in self.outputs:
            return None
        return found[0]

    def other_input(self, node: onnx.NodeProto, name: str) -> str | None:
        others = [value for value in node.input if value != name]
        return others[0] if len(node.input) == 2 and len(others) == 1 else None


def drop_nan_guards(model: onnx.ModelProto) -> int:
    """Remove each ``Where(IsNaN(p), 0, p)`` whose ``p`` is a Softmax's output; return how many."""
    graph = _Graph(model.graph)
    dropped: list[onnx.NodeProto] = []
    for isnan in [node for node in model.graph.node if node.op_type == "IsNaN"]:
        probabilities = isnan.input[0]
        softmax = graph.producer.get(probabilities)
        where = graph.only_consumer(isnan.output[0], "Where")
        if softmax is None or softmax.op_type != "Softmax" or where is None:
            continue
        if list(where.input) != [isnan.output[0], where.input[1], probabilities] or graph.scalar(where.input[1]) != 0.0:
            continue
        if where.output[0] in graph.outputs:
            continue
        for consumer in graph.consumers.get(where.output[0], []):
            consumer.input[:] = [probabilities if value == where.output[0] else value for value in consumer.input]
        dropped += [isnan, where]
    _rebuild(model.graph, dropped)
    return len(dropped) // 2


def fuse_gelu(model: onnx.ModelProto) -> int:
    """Replace each ``x * ((erf(x / sqrt 2) + 1) * 0.5)`` by one ``com.microsoft`` Gelu; return how many."""
    graph = _Graph(model.graph)
    dropped: list[onnx.NodeProto] = []
    fused: dict[str, onnx.NodeProto] = {}  # the last Mul's output -> its replacement, put in its place
    for erf in [node for node in model.graph.node if node.op_type == "Erf"]:
        divide = graph.producer.get(erf.input[0])
        if divide is None or divide.op_type != "Div" or not _near(graph.scalar(divide.input[1]), math.sqrt(2)):
            continue
        x = divide.input[0]
        if graph.only_consumer(divide.output[0], "Erf") is None:
            continue
        add = graph.only_consumer(erf.output[0], "Add")
        if add is None or graph.scalar(graph.other_input(add, erf.output[0])) != 1.0:
            continue
        half = graph.only_consumer(add.output[0], "Mul")
        if half is None or graph.scalar(graph.other_input(half, add.output[0])) != 0.5:
            continue
        product = graph.only_consumer(half.output[0], "Mul")
        if product is None or graph.other_input(product, half.output[0]) != x:
            continue
        fused[product.output[0]] = helper.make_node(
            "Gelu", [x], [product.output[0]], name=f"{product.name}_gelu", domain=CONTRIB_DOMAIN
        )
        dropped += [divide, erf, add, half]
    if fused and not any(opset.domain == CONTRIB_DOMAIN for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid(CONTRIB_DOMAIN, 1))
    _rebuild(model.graph, dropped, fused)
    return len(fused)


def _near(value: float | None, expected: float) -> bool:
    return value is not None and math.isclose(value, expected, rel_tol=1e-6)


def _rebuild(
    graph: onnx.GraphProto, dropped: Iterable[onnx.NodeProto], replaced: Mapping[str, onnx.NodeProto] | None = None
) -> None:
    """The graph's nodes without ``dropped``, each in ``replaced`` (by its first output) swapped in place, so
    the order stays topological."""
    # A node is known by its first output: every value has one producer, while names may repeat or be empty.
    gone = {node.output[0] for node in dropped}
    swap = replaced or {}
    kept = [swap.get(node.output[0], node) for node in graph.node if node.output[0] not in gone]
    del graph.node[:]
    graph.node.extend(kept)
