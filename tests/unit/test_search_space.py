"""The search's grid reads a list in a space as a choice between values, or, for a parameter whose schema admits
an array, as one value: op_types_to_quantize (a list of op types, or `auto`) stays one value."""

from __future__ import annotations

from ortflow.stages.quantize_static import QuantizeStatic
from ortflow.stages.search.space import choices


def test_a_list_of_op_types_is_one_value_and_a_list_of_lists_a_choice():
    schema = QuantizeStatic.params_schema
    assert choices("op_types_to_quantize", ["MatMul", "Gather"], schema) == [["MatMul", "Gather"]]
    assert choices("op_types_to_quantize", [["MatMul"], ["Conv"]], schema) == [["MatMul"], ["Conv"]]
    assert choices("op_types_to_quantize", "auto", schema) == ["auto"]
    assert choices("per_channel", [True, False], schema) == [True, False]
