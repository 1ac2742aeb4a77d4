"""Reducing a model's precision (INT8, INT4 weights, float16) and checking the result: which tensors calibration
reads and in how many passes, the activation ranges it reduces and writes, ortflow's calibration-table
extension, the model as static quantization prepares it (named nodes, the float set, the opset per-channel
needs), the `pre_process` decision, the instruction set's safe INT8 settings, known traps, per-layer weight
error, float16's range, what quantization changed in the graph, where its error enters, the sanity check, and
hints for ORT's quantizer failures.

The calibrate, quantize_*, convert_float16 and quantization_debug stages share these so that they reach the same
decision on the same model (calibrate and quantize_static must agree on the graph the table describes). Not part
of the plugin API."""
