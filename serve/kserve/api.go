// Package kserve holds the KServe v2 (Open Inference Protocol) JSON shapes that plan serve
// answers on HTTP and speaks to remote workers' endpoints: the request, response, metadata
// and tensor types, the strict request decoder (with its allocation-free fast path), the
// hand-written answer encoder and the IEEE half-float conversions of FP16 tensors. It is a
// leaf of serve: the front ends, the driver and the workers all use it, and it imports none
// of them.
package kserve

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/formats/jsonx"
)

// The KServe v2 ("Open Inference Protocol") JSON shapes plan serves and, for remote workers,
// speaks to upstream endpoints. Only what one-tensor-in, one-tensor-out models need is typed;
// unknown request fields are rejected so a typo does not pass silently.

// InferRequest is the body of POST /v2/models/{model}/infer.
type InferRequest struct {
	ID         string                `json:"id,omitempty"`
	Parameters map[string]any        `json:"parameters,omitempty"`
	Inputs     []TensorJSON          `json:"inputs"`
	Outputs    []RequestedOutputJSON `json:"outputs,omitempty"`
}

// RequestedOutputJSON names an output the client wants.
type RequestedOutputJSON struct {
	Name       string         `json:"name"`
	Parameters map[string]any `json:"parameters,omitempty"`
}

// TensorJSON is one input or output tensor. Data stays raw: for emulated workers it is carried
// through byte for byte, which keeps the driver's hot path free of float parsing.
type TensorJSON struct {
	Name       string          `json:"name"`
	Shape      []int64         `json:"shape"`
	Datatype   string          `json:"datatype"`
	Parameters map[string]any  `json:"parameters,omitempty"`
	Data       json.RawMessage `json:"data"`
}

// InferResponse is the body of a successful inference. Timing and Outcome are plan's
// extension: the end-to-end latency and where it went.
type InferResponse struct {
	ModelName    string       `json:"model_name"`
	ModelVersion string       `json:"model_version,omitempty"`
	ID           string       `json:"id,omitempty"`
	Outputs      []TensorJSON `json:"outputs"`
	// Parameters (KServe v2's response parameters) say which model answered when the models
	// report certainties (a cascade): answered_by (the model), stage, hops (models run),
	// certainty (max softmax probability) and label (argmax).
	Parameters map[string]any `json:"parameters,omitempty"`
	Outcome    string         `json:"outcome"`
	Timing     Timing         `json:"timing"`
}

// DropResponse is the 503 body of a request a policy dropped (or that shutdown or a
// migration could not serve).
type DropResponse struct {
	Error  string `json:"error"`
	Model  string `json:"model,omitempty"`
	ID     string `json:"id,omitempty"`
	Reason string `json:"reason"`
	// Stage is the stage the request was dropped at ("queue" before the first stage).
	Stage      string `json:"stage"`
	EstimateUs int64  `json:"estimate_us,omitempty"`
	Timing     Timing `json:"timing"`
}

// ErrorResponse is the body of every other error (400, 404, 500, 502).
type ErrorResponse struct {
	Error string `json:"error"`
}

// Timing is the latency breakdown of one request, in µs of the server's monotonic clock.
// LatencyUs = IntakeUs + MigrationUs + BatchWaitUs + QueueUs + ExecUs + TransferUs + DeliveryUs.
type Timing struct {
	// LatencyUs runs from the request's arrival (its first bytes read off the socket) to its
	// answer; the deadline counts from the same instant.
	LatencyUs int64 `json:"latency_us"`
	// SLOUs is the application's latency objective.
	SLOUs int64 `json:"slo_us"`
	// IntakeUs is the time from the arrival to the driver: reading and decoding the body and
	// waiting at the intake queue.
	IntakeUs int64 `json:"intake_us"`
	// MigrationUs is time held while a plan reload paused intake.
	MigrationUs int64 `json:"migration_us,omitempty"`
	// BatchWaitUs is time in the dispatcher's queue until the request's batch was formed.
	BatchWaitUs int64 `json:"batch_wait_us"`
	// QueueUs is time a dispatched batch waited for its reserved worker or link.
	QueueUs int64 `json:"queue_us"`
	// ExecUs and TransferUs are summed over stages (details in Stages).
	ExecUs     int64 `json:"exec_us"`
	TransferUs int64 `json:"transfer_us"`
	// DeliveryUs is the executor's own overhead between the last stage's end and the answer.
	DeliveryUs int64 `json:"delivery_us"`
	// FirstTokenUs is an LLM request's time to first token, from its arrival as LatencyUs
	// (omitted when its policy stamped none).
	FirstTokenUs int64         `json:"first_token_us,omitempty"`
	Stages       []StageTiming `json:"stages,omitempty"`
}

// StageTiming is one hop of the request's route.
type StageTiming struct {
	Stage      string `json:"stage"`
	Worker     string `json:"worker"`
	Batch      int    `json:"batch"`
	QueueUs    int64  `json:"queue_us"`
	ExecUs     int64  `json:"exec_us"`
	TransferUs int64  `json:"transfer_us,omitempty"`
}

// ModelMetadata is the body of GET /v2/models/{model}.
type ModelMetadata struct {
	Name     string       `json:"name"`
	Versions []string     `json:"versions,omitempty"`
	Platform string       `json:"platform"`
	Inputs   []TensorSpec `json:"inputs"`
	Outputs  []TensorSpec `json:"outputs"`
	// SLOUs and RateRPS are plan's extension: the objective and the planned throughput.
	SLOUs   int64   `json:"slo_us"`
	RateRPS float64 `json:"rate_rps"`
}

// TensorSpec declares a model input or output: -1 marks a variable dimension.
type TensorSpec struct {
	Name     string  `json:"name"`
	Datatype string  `json:"datatype"`
	Shape    []int64 `json:"shape"`
}

// BadRequestError is a request the server cannot take: it becomes a 400 with its message.
type BadRequestError struct{ Msg string }

func (e *BadRequestError) Error() string { return e.Msg }

func badf(format string, args ...any) error {
	return &BadRequestError{Msg: fmt.Sprintf(format, args...)}
}

// DecodeInferRequest parses an infer request body and checks it against the model's input
// spec: one input, the declared datatype, a shape whose batch dimension is 1 (plan batches
// requests itself) and whose other dimensions match, and data whose element count matches
// the shape. Every failure is a *BadRequestError naming the field.
func DecodeInferRequest(body []byte, spec TensorSpec) (*InferRequest, error) {
	req, err := DecodeInfer(body, spec)
	if err != nil {
		return nil, err
	}
	return &req, nil
}

// DecodeInfer is DecodeInferRequest returning the request by value (the HTTP handler's hot path
// keeps it on its stack).
func DecodeInfer(body []byte, spec TensorSpec) (InferRequest, error) {
	return decodeInfer(body, nil, false, spec)
}

// decodeInfer decodes the JSON request js and, for a body of the binary tensor data
// extension (binary), takes the data of the inputs that declare binary_data_size from bin.
func decodeInfer(js, bin []byte, binary bool, spec TensorSpec) (InferRequest, error) {
	req, ok := decodeInferFast(js, spec)
	if !ok {
		var err error
		if req, err = decodeInferJSON(js, binary); err != nil {
			return InferRequest{}, err
		}
	}
	raws, err := binaryInputs(req.Inputs, bin, binary)
	if err != nil {
		return InferRequest{}, err
	}
	if len(req.Inputs) != 1 {
		return InferRequest{}, badf("inputs: %d tensors: the model takes exactly one (%s)", len(req.Inputs), spec.Name)
	}
	if raws != nil && raws[0] != nil {
		if err := fromBinary(&req.Inputs[0], raws[0], spec); err != nil {
			return InferRequest{}, err
		}
	}
	// The same check as every other front end's (serve.Server.Submit: KServe gRPC, ...).
	if err := CheckInput(&req.Inputs[0], spec); err != nil {
		return InferRequest{}, err
	}
	return req, nil
}

// decodeInferJSON is the reference decoder: jsonx's gate (nesting, duplicate and
// case-variant keys, null numbers), then encoding/json with unknown fields refused. binary:
// body is the JSON part of a binary tensor data body (BinaryHeader gave its length).
func decodeInferJSON(body []byte, binary bool) (InferRequest, error) {
	var req InferRequest
	if err := jsonx.Decode(body, &req, jsonx.Options{Closed: true}); err != nil {
		if errors.Is(err, jsonx.ErrTrailing) {
			if binary {
				return req, badf("malformed JSON: trailing data after the request object, within the %d bytes %s gives the JSON", len(body), BinaryHeader)
			}
			// What a client of Triton's binary tensor data extension sees when its header
			// was lost on the way (a proxy): say what the data after the JSON needs.
			return req, badf("malformed JSON: trailing data after the request object (binary tensor data after the JSON needs the %s header: the JSON's length)", BinaryHeader)
		}
		return req, badf("malformed JSON: %s", DescribeJSONError(err))
	}
	return req, nil
}

// DescribeJSONError words an encoding/json error for a client: a syntax error with its byte
// offset, a type error with the field and the types, anything else without the "json: "
// prefix.
func DescribeJSONError(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %s: got a JSON %s, want %s", te.Field, te.Value, te.Type)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// CheckOutputs checks the outputs an infer request to model asks for against the model's
// one output: each must name it (KServe v2: a request may list the outputs it wants; Triton
// refuses one the model lacks, "unexpected inference output"). The message names the model
// and its output, so a client sees what to ask for.
func CheckOutputs(model string, outs []RequestedOutputJSON, spec TensorSpec) error {
	for i, o := range outs {
		if o.Name != spec.Name {
			return badf("outputs[%d].name: %s", i, UnexpectedOutput(model, o.Name, spec.Name))
		}
	}
	return nil
}

// UnexpectedOutput words the refusal of an output the model does not have, as every front
// end answers it: Triton's words, then the output the model has.
func UnexpectedOutput(model, name, has string) string {
	return fmt.Sprintf("unexpected inference output %q for model %q: its output is %q", name, model, has)
}

// CheckInput checks one input tensor against the model's input spec as the HTTP API does
// (name, datatype, rank, one sample, every fixed dimension, the data's elements) and fills in
// an empty name.
func CheckInput(in *TensorJSON, spec TensorSpec) error {
	n, err := checkInputSpec(in, spec)
	if err != nil {
		return err
	}
	got, err := checkData(in.Data, in.Shape, in.Datatype, "inputs[0].data")
	if err != nil {
		return &BadRequestError{Msg: err.Error()}
	}
	if got != n {
		return badf("inputs[0].data: %d elements: shape %v needs %d", got, in.Shape, n)
	}
	if in.Name == "" {
		in.Name = spec.Name
	}
	return nil
}

// checkInputSpec checks everything of CheckInput but the data (name, datatype, rank, one
// sample, every fixed dimension) and returns the element count the shape gives.
func checkInputSpec(in *TensorJSON, spec TensorSpec) (int64, error) {
	if in.Name != spec.Name && in.Name != "" {
		return 0, badf("inputs[0].name: %q: the model's input is %q", in.Name, spec.Name)
	}
	if in.Datatype != spec.Datatype {
		return 0, badf("inputs[0].datatype: %q: the model takes %s", in.Datatype, spec.Datatype)
	}
	if len(in.Shape) != len(spec.Shape) {
		return 0, badf("inputs[0].shape: %v: the model takes rank %d %v", in.Shape, len(spec.Shape), spec.Shape)
	}
	n := int64(1)
	for i, d := range in.Shape {
		if d <= 0 {
			// A zero-size tensor holds no sample: nothing to infer.
			return 0, badf("inputs[0].shape[%d]: %d: must be > 0 (a zero-size tensor holds no data)", i, d)
		}
		if i == 0 {
			if d != 1 {
				return 0, badf("inputs[0].shape[0]: %d: send one sample per request (plan serve batches requests itself)", d)
			}
		} else if spec.Shape[i] >= 0 && d != spec.Shape[i] {
			return 0, badf("inputs[0].shape[%d]: %d: the model takes %v", i, d, spec.Shape)
		}
		if n > math.MaxInt32/d {
			return 0, badf("inputs[0].shape: %v: too many elements", in.Shape)
		}
		n *= d
	}
	return n, nil
}

// checkData checks a tensor's data against its shape and datatype and counts its elements.
// Data is flat (row-major, any length: the caller compares the count) or nested exactly as
// the shape (rank levels, or rank−1 without the batch dimension), every list as long as its
// dimension. A ragged list, an array where a number belongs (or the reverse) or an element
// of the wrong type is an error naming the element's path (inputs[0].data[1][1]).
func checkData(raw []byte, shape []int64, dtype, name string) (int64, error) {
	c := dataChecker{raw: raw, shape: shape, dtype: dtype, name: name, leaf: -1}
	c.ws()
	if c.i >= len(raw) || raw[c.i] != '[' {
		return 0, fmt.Errorf("%s: must be a JSON array", name)
	}
	if err := c.list(1); err != nil {
		return 0, err
	}
	c.ws()
	if c.i < len(raw) {
		return 0, fmt.Errorf("%s: trailing data at byte %d", name, c.i)
	}
	if c.lenErr != nil {
		return 0, c.lenErr
	}
	return c.n, nil
}

type dataChecker struct {
	raw   []byte
	i     int
	shape []int64
	dtype string
	name  string
	// leaf is the depth of the first element (-1 before it); every element must be there.
	leaf int
	path []int
	n    int64
	// lenErr is the first list of the wrong length: reported only when no element is
	// misplaced or mistyped, which names the bad element more precisely.
	lenErr error
}

func (c *dataChecker) ws() {
	for c.i < len(c.raw) && (c.raw[c.i] == ' ' || c.raw[c.i] == '\t' || c.raw[c.i] == '\n' || c.raw[c.i] == '\r') {
		c.i++
	}
}

// at renders the path of the current element.
func (c *dataChecker) at() string {
	b := []byte(c.name)
	for _, k := range c.path {
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(k), 10)
		b = append(b, ']')
	}
	return string(b)
}

// list parses the array at c.i (a '['), at depth (the data itself is depth 1).
func (c *dataChecker) list(depth int) error {
	if depth > 32 {
		return fmt.Errorf("%s: nested too deeply", c.at())
	}
	if c.leaf >= 0 && depth > c.leaf {
		return fmt.Errorf("%s: an array where a number belongs (ragged data: elements are %d levels deep elsewhere)", c.at(), c.leaf)
	}
	c.i++ // '['
	c.ws()
	k := 0
	if c.i < len(c.raw) && c.raw[c.i] == ']' {
		c.i++
		return c.closed(depth, 0)
	}
	c.path = append(c.path, 0)
	for {
		c.path[len(c.path)-1] = k
		c.ws()
		if c.i >= len(c.raw) {
			return fmt.Errorf("%s: unterminated array", c.name)
		}
		if c.raw[c.i] == '[' {
			if err := c.list(depth + 1); err != nil {
				return err
			}
		} else if err := c.scalar(depth); err != nil {
			return err
		}
		k++
		c.ws()
		if c.i >= len(c.raw) {
			return fmt.Errorf("%s: unterminated array", c.name)
		}
		switch c.raw[c.i] {
		case ',':
			c.i++
		case ']':
			c.i++
			c.path = c.path[:len(c.path)-1]
			return c.closed(depth, k)
		default:
			return fmt.Errorf("%s: missing comma at byte %d", c.at(), c.i)
		}
	}
}

// closed checks the length k of a list at depth against the shape, once the elements' depth
// is known: flat data (depth 1) is counted by the caller; nested data must follow the shape.
func (c *dataChecker) closed(depth, k int) error {
	L := c.leaf
	if L <= 1 {
		return nil // flat, or no element yet (an empty list: the count decides)
	}
	rank := len(c.shape)
	if L != rank && L != rank-1 {
		return fmt.Errorf("%s: nested %d levels deep: shape %v takes flat data or %d levels", c.name, L, c.shape, rank)
	}
	want := c.shape[rank-L+depth-1]
	if int64(k) != want && c.lenErr == nil {
		c.lenErr = fmt.Errorf("%s: %d elements at this level: shape %v needs %d (ragged data)", c.at(), k, c.shape, want)
	}
	return nil
}

// scalar checks one element at depth.
func (c *dataChecker) scalar(depth int) error {
	if c.leaf < 0 {
		c.leaf = depth
	} else if depth != c.leaf {
		return fmt.Errorf("%s: a number where an array belongs (ragged data: elements are %d levels deep elsewhere)", c.at(), c.leaf)
	}
	start := c.i
	if c.raw[c.i] == '"' {
		// A string: skip it whole (escapes included) so the error shows it.
		c.i++
		for c.i < len(c.raw) && c.raw[c.i] != '"' {
			if c.raw[c.i] == '\\' {
				c.i++
			}
			c.i++
		}
		c.i = min(c.i+1, len(c.raw))
		return fmt.Errorf("%s: %s: want a %s", c.at(), Clip(c.raw[start:c.i]), c.want())
	}
	for c.i < len(c.raw) && c.raw[c.i] != ',' && c.raw[c.i] != ']' && c.raw[c.i] != '[' && c.raw[c.i] != ' ' && c.raw[c.i] != '\t' && c.raw[c.i] != '\n' && c.raw[c.i] != '\r' {
		c.i++
	}
	tok := c.raw[start:c.i]
	if err := checkElement(tok, c.dtype); err != nil {
		return fmt.Errorf("%s: %v", c.at(), err)
	}
	c.n++
	return nil
}

func (c *dataChecker) want() string {
	if c.dtype == "BOOL" {
		return "true or false for BOOL"
	}
	return "number for " + c.dtype
}

// checkElement checks that tok is a value of dtype.
func checkElement(tok []byte, dtype string) error {
	switch {
	case dtype == "BOOL":
		if string(tok) != "true" && string(tok) != "false" {
			return fmt.Errorf("%s: want true or false for BOOL", Clip(tok))
		}
	case string(tok) == "true" || string(tok) == "false":
		return fmt.Errorf("%s: want a number for %s", tok, dtype)
	case isNonFinite(tok):
		// Not JSON, but what a binary front end's converter writes for a NaN or an infinity
		// (serve/kservegrpc), so every front end rejects them here alike.
		return fmt.Errorf("%s: not a finite %s number", tok, dtype)
	case !isJSONNumber(tok):
		return fmt.Errorf("%s: want a number for %s", Clip(tok), dtype)
	case strings.HasPrefix(dtype, "FP"):
		// Only an exponent or a long mantissa can overflow; parse just those.
		if hasAny(tok, 'e', 'E') || len(tok) > 20 {
			bits := 32
			if dtype == "FP64" {
				bits = 64
			}
			if _, err := strconv.ParseFloat(string(tok), bits); err != nil {
				return fmt.Errorf("%s: not a finite %s number", Clip(tok), dtype)
			}
		}
	case hasAny(tok, '.', 'e', 'E'):
		return fmt.Errorf("%s: not an integer (datatype %s)", tok, dtype)
	}
	return nil
}

// isNonFinite reports the tokens a converter writes for NaN and the infinities.
func isNonFinite(tok []byte) bool {
	switch string(tok) {
	case "NaN", "+Inf", "-Inf", "Inf", "Infinity", "-Infinity":
		return true
	}
	return false
}

// countElements counts the leaves of a (possibly nested, row-major) JSON array and checks
// that each is a value of the datatype. It scans the bytes once without building values: an
// image tensor has ~10^5 elements, and decoding them into interfaces would cost more than
// serving the request.
func countElements(raw json.RawMessage, dtype string) (int64, error) {
	if len(raw) == 0 {
		return 0, errors.New("missing")
	}
	var n int64
	err := scanArray(raw, func(tok []byte) error {
		if err := checkElement(tok, dtype); err != nil {
			return fmt.Errorf("element %d: %v", n, err)
		}
		n++
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// hasAny reports whether b contains any of cs (bytes.ContainsAny builds a set per call,
// which shows at 10^5 tokens per request).
func hasAny(b []byte, cs ...byte) bool {
	for _, x := range b {
		for _, c := range cs {
			if x == c {
				return true
			}
		}
	}
	return false
}

// Clip shortens b to its first 40 bytes for an error message, so a hostile value does not
// flood the client's answer or the log.
func Clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// scanArray walks a JSON array of arrays and scalars, calling leaf for every scalar token.
// It checks the array grammar (brackets, commas, nesting ≤ 32); leaf checks the tokens.
func scanArray(raw []byte, leaf func(tok []byte) error) error {
	i := 0
	ws := func() {
		for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
			i++
		}
	}
	ws()
	if i >= len(raw) || raw[i] != '[' {
		return errors.New("must be a JSON array")
	}
	depth := 0
	// expect: what may come next; 0 = a value or ']' (after '['), 1 = ',' or ']' (after a
	// value), 2 = a value (after ',').
	expect := 2
	for {
		ws()
		if i >= len(raw) {
			if depth > 0 {
				return errors.New("unterminated array")
			}
			return nil
		}
		if depth == 0 && expect == 1 {
			return fmt.Errorf("trailing data at byte %d", i)
		}
		c := raw[i]
		switch {
		case c == '[':
			if expect == 1 {
				return fmt.Errorf("missing comma at byte %d", i)
			}
			depth++
			if depth > 32 {
				return errors.New("nested too deeply")
			}
			i++
			expect = 0
		case c == ']':
			if expect == 2 && depth > 0 {
				return fmt.Errorf("unexpected ] at byte %d", i)
			}
			depth--
			i++
			expect = 1
		case c == ',':
			if expect != 1 {
				return fmt.Errorf("unexpected , at byte %d", i)
			}
			i++
			expect = 2
		default:
			if expect == 1 {
				return fmt.Errorf("missing comma at byte %d", i)
			}
			start := i
			for i < len(raw) && raw[i] != ',' && raw[i] != ']' && raw[i] != '[' && raw[i] != ' ' && raw[i] != '\t' && raw[i] != '\n' && raw[i] != '\r' {
				i++
			}
			if err := leaf(raw[start:i]); err != nil {
				return err
			}
			expect = 1
		}
	}
}

// isJSONNumber reports whether b is a number in JSON's grammar.
func isJSONNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		d := i + 1
		if i = skipDigits(b, d); i == d {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		if i = skipDigits(b, d); i == d {
			return false
		}
	}
	return i == len(b)
}

// skipDigits is the index of the first byte at or after i in b that is not a decimal digit.
func skipDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// Float32s decodes a tensor's data (nested arrays allowed) as float32 values (BOOL as 0/1).
func (t *TensorJSON) Float32s() ([]float32, error) {
	out := make([]float32, 0, len(t.Data)/4)
	err := scanArray(t.Data, func(tok []byte) error {
		switch string(tok) {
		case "true":
			out = append(out, 1)
			return nil
		case "false":
			out = append(out, 0)
			return nil
		}
		f, err := strconv.ParseFloat(string(tok), 32)
		if err != nil {
			return fmt.Errorf("element %d: %s: not a number", len(out), Clip(tok))
		}
		out = append(out, float32(f))
		return nil
	})
	return out, err
}

// Float32Tensor builds a flat FP32 tensor.
func Float32Tensor(name string, shape []int64, data []float32) TensorJSON {
	b := make([]byte, 0, 2+len(data)*10)
	b = append(b, '[')
	for i, f := range data {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendFloat32(b, f)
	}
	b = append(b, ']')
	return TensorJSON{Name: name, Shape: shape, Datatype: "FP32", Data: b}
}

func appendFloat32(b []byte, f float32) []byte {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return append(b, '0') // JSON has no NaN; a model producing one is already broken
	}
	return fmt.Appendf(b, "%g", f)
}
