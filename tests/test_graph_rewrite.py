"""The derived graph's float rewrites (decision 149): what they remove, what they leave, and that onnxruntime
computes the same function after them. Small graphs built here run on the real onnxruntime; the derived
graph itself is checked at the end."""

from __future__ import annotations

import collections
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from app.embedding import EmbeddingError, graph_rewrite
from app.embedding.graph_rewrite import drop_nan_guards, fuse_gelu
from app.embedding.local import _session, derive_int8_model, int8_compute_model

Shape = list[int | str]


def scalar(name: str, value: float) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(value, dtype=np.float32), name)


def model(
    nodes: list[onnx.NodeProto], constants: list[onnx.TensorProto], inputs: list[str], out: str
) -> onnx.ModelProto:
    shape: Shape = ["rows", 8]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape) for name in inputs],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, shape)],
        initializer=constants,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def run(graph: onnx.ModelProto, **feeds: np.ndarray) -> np.ndarray:
    onnx.checker.check_model(graph)
    session = ort.InferenceSession(graph.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, feeds)[0])


def ops(graph: onnx.ModelProto) -> collections.Counter[str]:
    return collections.Counter(node.op_type for node in graph.graph.node)


def guarded_softmax(zero: float = 0.0, after: str = "Softmax") -> onnx.ModelProto:
    nodes = [
        helper.make_node(after, ["scores"], ["p"], name="s"),  # Softmax's axis: the last by default (opset 13+)
        helper.make_node("IsNaN", ["p"], ["nan"], name="isnan"),
        helper.make_node("Where", ["nan", "zero", "p"], ["guarded"], name="where"),
        helper.make_node("MatMul", ["guarded", "values"], ["out"], name="product"),
    ]
    values = numpy_helper.from_array(np.arange(64, dtype=np.float32).reshape(8, 8) / 64, "values")
    return model(nodes, [scalar("zero", zero), values], ["scores"], "out")


def test_a_softmax_nan_guard_is_dropped_and_the_result_is_the_same_bits() -> None:
    graph = guarded_softmax()
    # Keys masked as the export masks them: float32's lowest value added, a whole row of them included.
    scores = np.random.default_rng(1).normal(size=(4, 8)).astype(np.float32)
    scores[:, 5:] += np.finfo(np.float32).min
    scores[3, :] = np.finfo(np.float32).min
    before = run(graph, scores=scores)

    assert drop_nan_guards(graph) == 1
    assert ops(graph) == {"Softmax": 1, "MatMul": 1}
    np.testing.assert_array_equal(run(graph, scores=scores), before)


@pytest.mark.parametrize(("zero", "after"), [(0.5, "Softmax"), (0.0, "Relu")])
def test_a_guard_that_is_not_a_softmax_nan_guard_stays(zero: float, after: str) -> None:
    graph = guarded_softmax(zero, after)
    assert drop_nan_guards(graph) == 0
    assert ops(graph)["Where"] == 1 and ops(graph)["IsNaN"] == 1


def gelu_chain(root: float = 2**0.5, one: float = 1.0, half: float = 0.5, x_last: str = "x") -> onnx.ModelProto:
    # x * ((erf(x / sqrt 2) + 1) * 0.5), in the export's order.
    nodes = [
        helper.make_node("Div", ["x", "root"], ["scaled"], name="div"),
        helper.make_node("Erf", ["scaled"], ["erf"], name="erf"),
        helper.make_node("Add", ["erf", "one"], ["shifted"], name="add"),
        helper.make_node("Mul", ["half", "shifted"], ["halved"], name="half"),
        helper.make_node("Mul", [x_last, "halved"], ["out"], name="product"),
    ]
    constants = [scalar("root", root), scalar("one", one), scalar("half", half)]
    return model(nodes, constants, ["x", "y"] if x_last == "y" else ["x"], "out")


def test_the_exports_gelu_becomes_one_gelu_computing_the_same_function() -> None:
    graph = gelu_chain()
    x = np.linspace(-6, 6, 96, dtype=np.float32).reshape(12, 8)
    before = run(graph, x=x)

    assert fuse_gelu(graph) == 1
    assert ops(graph) == {"Gelu": 1}
    assert graph.graph.node[0].domain == "com.microsoft" and graph.graph.node[0].output[0] == "out"
    np.testing.assert_allclose(run(graph, x=x), before, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "changed", [{"root": 1.5}, {"one": 2.0}, {"half": 0.25}, {"x_last": "y"}], ids=["root", "one", "half", "other-x"]
)
def test_a_chain_that_is_not_gelu_stays(changed: dict[str, float | str]) -> None:
    graph = gelu_chain(**changed)  # type: ignore[arg-type]
    assert fuse_gelu(graph) == 0
    assert ops(graph) == {"Div": 1, "Erf": 1, "Add": 1, "Mul": 2}


def test_the_derived_graph_has_neither_pattern_and_its_sessions_keep_layer_norms_apart(tmp_path: Path) -> None:
    derived = onnx.load_from_string(int8_compute_model())
    counts = ops(derived)
    assert counts["IsNaN"] == 0 and counts["Erf"] == 0 and counts["Gelu"] == 6
    assert counts["Softmax"] == 6  # the attention itself is untouched

    # onnxruntime would fuse each residual Add with its LayerNormalization; the product's sessions do not.
    optimized = tmp_path / "optimized.onnx"
    _session(int8_compute_model(), 1, False, optimized_to=optimized)
    run_graph = ops(onnx.load(optimized))
    assert run_graph["SkipLayerNormalization"] == 0 and run_graph["LayerNormalization"] == 13


def test_a_shipped_graph_whose_layers_do_not_match_fails_the_derivation_naming_both_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The model is pinned by sha256, so a mismatch is our code's error: loud, never a graph half rewritten.
    monkeypatch.setattr(graph_rewrite, "fuse_gelu", lambda model: 0)
    with pytest.raises(EmbeddingError, match="6 softmax NaN guards and 0 GELUs found where its 6 layers"):
        derive_int8_model()
