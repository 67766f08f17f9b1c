package serve

// ONNXOptions configure the onnx workers.
type ONNXOptions struct {
	// Model is the ONNX file the plan's profile was made from (node i of the model is layer
	// i of the profile, which is how the onnx profiler numbers layers); for plans whose
	// stages each run a whole model (a cascade), a directory holding MODEL.onnx for each.
	Model string
	// Device is cpu or cuda:N.
	Device string
	// Threads is the intra-op thread count per session (0 = ONNX Runtime's default).
	Threads int
}
