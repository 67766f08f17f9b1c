package highs

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tetratelabs/wazero/api"
)

// Problem is an LP or MIP in HiGHS's column-wise (CSC) form.
type Problem struct {
	NumCol, NumRow int
	Maximize       bool
	Offset         float64
	ColCost        []float64 // len NumCol
	ColLower       []float64 // len NumCol
	ColUpper       []float64 // len NumCol
	RowLower       []float64 // len NumRow
	RowUpper       []float64 // len NumRow
	AStart         []int32   // len NumCol+1
	AIndex         []int32   // row indices, len AStart[NumCol]
	AValue         []float64 // len AStart[NumCol]
	Integrality    []int32   // nil for an LP, else len NumCol (0 continuous, 1 integer)
}

func (in *Instance) checkStatus(what string, r []uint64, err error) error {
	if err != nil {
		return err
	}
	if st := int32(r[0]); st == StatusError {
		return fmt.Errorf("highs: %s failed%s", what, in.logHint())
	}
	return nil
}

func (in *Instance) logHint() string {
	if t := in.state.tail.Lines(3); t != "" {
		return ": " + t
	}
	return ""
}

// SetBoolOption sets a bool option of the current Highs object.
func (in *Instance) SetBoolOption(ctx context.Context, name string, v bool) error {
	p, err := in.putName(name)
	if err != nil {
		return err
	}
	b := uint64(0)
	if v {
		b = 1
	}
	r, err := in.call(ctx, expSetBoolOption, in.h, uint64(p), b)
	return in.checkStatus("setting option "+name, r, err)
}

// SetIntOption sets an int option of the current Highs object.
func (in *Instance) SetIntOption(ctx context.Context, name string, v int) error {
	p, err := in.putName(name)
	if err != nil {
		return err
	}
	r, err := in.call(ctx, expSetIntOption, in.h, uint64(p), uint64(uint32(int32(v))))
	return in.checkStatus("setting option "+name, r, err)
}

// SetDoubleOption sets a double option of the current Highs object.
func (in *Instance) SetDoubleOption(ctx context.Context, name string, v float64) error {
	p, err := in.putName(name)
	if err != nil {
		return err
	}
	r, err := in.call(ctx, expSetDoubleOption, in.h, uint64(p), api.EncodeF64(v))
	return in.checkStatus("setting option "+name, r, err)
}

// SetStringOption sets a string option of the current Highs object.
func (in *Instance) SetStringOption(ctx context.Context, name, v string) error {
	// Name and value share the scratch buffer: name first, value after it.
	if len(name)+len(v)+2 > scratchOutOff {
		return fmt.Errorf("highs: option %s=%q too long", name, v)
	}
	buf := append(append(append([]byte(name), 0), v...), 0)
	if !in.mem.Write(in.scratch, buf) {
		return fmt.Errorf("%w: scratch buffer out of range", ErrAborted)
	}
	r, err := in.call(ctx, expSetStringOption, in.h, uint64(in.scratch), uint64(in.scratch)+uint64(len(name)+1))
	return in.checkStatus("setting option "+name, r, err)
}

// IntInfo returns an int info value (e.g. "primal_solution_status").
func (in *Instance) IntInfo(ctx context.Context, name string) (int, error) {
	v, err := in.info(ctx, expGetIntInfo, name)
	return int(int32(uint32(v))), err
}

// Int64Info returns an int64 info value (e.g. "mip_node_count").
func (in *Instance) Int64Info(ctx context.Context, name string) (int64, error) {
	v, err := in.info(ctx, expGetInt64Info, name)
	return int64(v), err
}

// DoubleInfo returns a double info value (e.g. "mip_dual_bound").
func (in *Instance) DoubleInfo(ctx context.Context, name string) (float64, error) {
	v, err := in.info(ctx, expGetDoubleInfo, name)
	return math.Float64frombits(v), err
}

func (in *Instance) info(ctx context.Context, fn, name string) (uint64, error) {
	p, err := in.putName(name)
	if err != nil {
		return 0, err
	}
	out := in.scratch + scratchOutOff
	in.mem.WriteUint64Le(out, 0)
	r, err := in.call(ctx, fn, in.h, uint64(p), uint64(out))
	if err := in.checkStatus("reading info "+name, r, err); err != nil {
		return 0, err
	}
	v, _ := in.mem.ReadUint64Le(out)
	return v, nil
}

// PassModel loads p into the current Highs object (Highs_passMip if p has
// integrality, else Highs_passLp).
func (in *Instance) PassModel(ctx context.Context, p *Problem) error {
	if len(p.AStart) != p.NumCol+1 || len(p.AIndex) != len(p.AValue) ||
		int(p.AStart[p.NumCol]) != len(p.AIndex) {
		return fmt.Errorf("highs: inconsistent CSC matrix")
	}
	arrays := []any{p.ColCost, p.ColLower, p.ColUpper, p.RowLower, p.RowUpper, p.AStart, p.AIndex, p.AValue}
	if p.Integrality != nil {
		arrays = append(arrays, p.Integrality)
	}
	ptrs, err := in.writeArrays(ctx, arrays...)
	defer in.freeAll(ctx, ptrs)
	if err != nil {
		return err
	}
	sense := int32(objSenseMinimize)
	if p.Maximize {
		sense = objSenseMaximize
	}
	args := []uint64{
		in.h, uint64(p.NumCol), uint64(p.NumRow), uint64(len(p.AValue)),
		matrixFormatColwise, uint64(uint32(sense)), api.EncodeF64(p.Offset),
	}
	for _, ptr := range ptrs {
		args = append(args, uint64(ptr))
	}
	fn, what := expPassLp, "Highs_passLp"
	if p.Integrality != nil {
		fn, what = expPassMip, "Highs_passMip"
	}
	r, err := in.call(ctx, fn, args...)
	return in.checkStatus(what, r, err)
}

// SetSolution passes a (MIP start) column solution.
func (in *Instance) SetSolution(ctx context.Context, colValue []float64) error {
	ptrs, err := in.writeArrays(ctx, colValue)
	defer in.freeAll(ctx, ptrs)
	if err != nil {
		return err
	}
	r, err := in.call(ctx, expSetSolution, in.h, uint64(ptrs[0]), 0, 0, 0)
	return in.checkStatus("Highs_setSolution", r, err)
}

// Run runs the solver and returns the HighsStatus (StatusOK, StatusWarning
// or StatusError). A run that ends in error still has a model status.
func (in *Instance) Run(ctx context.Context) (int, error) {
	r, err := in.call(ctx, expRun, in.h)
	if err != nil {
		return StatusError, err
	}
	return int(int32(uint32(r[0]))), nil
}

// ModelStatus returns the model status after Run.
func (in *Instance) ModelStatus(ctx context.Context) (ModelStatus, error) {
	r, err := in.call(ctx, expGetModelStatus, in.h)
	if err != nil {
		return ModelNotset, err
	}
	return ModelStatus(int32(uint32(r[0]))), nil
}

// Solution returns the column values of the current solution.
func (in *Instance) Solution(ctx context.Context, numCol, numRow int) (x, colDual []float64, err error) {
	// Highs_getSolution fills all four arrays; the column values and duals are kept.
	ptrs, err := in.allocAll(ctx, 8*numCol, 8*numCol, 8*numRow, 8*numRow)
	defer in.freeAll(ctx, ptrs)
	if err != nil {
		return nil, nil, err
	}
	r, err := in.call(ctx, expGetSolution, in.h, uint64(ptrs[0]), uint64(ptrs[1]), uint64(ptrs[2]), uint64(ptrs[3]))
	if err := in.checkStatus("Highs_getSolution", r, err); err != nil {
		return nil, nil, err
	}
	read := func(p uint32) ([]float64, error) {
		buf, ok := in.mem.Read(p, uint32(8*numCol))
		if !ok {
			return nil, fmt.Errorf("%w: solution out of range", ErrAborted)
		}
		v := make([]float64, numCol)
		for i := range v {
			v[i] = math.Float64frombits(binary.LittleEndian.Uint64(buf[8*i:]))
		}
		return v, nil
	}
	if x, err = read(ptrs[0]); err != nil {
		return nil, nil, err
	}
	if colDual, err = read(ptrs[1]); err != nil {
		return nil, nil, err
	}
	return x, colDual, nil
}

// allocAll mallocs one buffer per size. On error the returned pointers
// (possibly partial) must still be passed to freeAll.
func (in *Instance) allocAll(ctx context.Context, sizes ...int) ([]uint32, error) {
	ptrs := make([]uint32, 0, len(sizes))
	for _, n := range sizes {
		p, err := in.malloc(ctx, n)
		if err != nil {
			return ptrs, err
		}
		ptrs = append(ptrs, p)
	}
	return ptrs, nil
}

func (in *Instance) freeAll(ctx context.Context, ptrs []uint32) {
	for _, p := range ptrs {
		in.free(ctx, p)
	}
}

// writeArrays copies []float64 and []int32 slices into freshly malloc'ed
// wasm memory. All buffers are allocated before any is written because a
// malloc may grow (and so move) linear memory, invalidating earlier views.
func (in *Instance) writeArrays(ctx context.Context, arrays ...any) ([]uint32, error) {
	sizes := make([]int, len(arrays))
	for i, a := range arrays {
		switch a := a.(type) {
		case []float64:
			sizes[i] = 8 * len(a)
		case []int32:
			sizes[i] = 4 * len(a)
		default:
			panic(fmt.Sprintf("highs: writeArrays: unsupported %T", a))
		}
	}
	ptrs, err := in.allocAll(ctx, sizes...)
	if err != nil {
		return ptrs, err
	}
	for i, a := range arrays {
		buf, ok := in.mem.Read(ptrs[i], uint32(sizes[i]))
		if !ok {
			return ptrs, fmt.Errorf("%w: buffer out of range", ErrAborted)
		}
		switch a := a.(type) {
		case []float64:
			for j, v := range a {
				binary.LittleEndian.PutUint64(buf[8*j:], math.Float64bits(v))
			}
		case []int32:
			for j, v := range a {
				binary.LittleEndian.PutUint32(buf[4*j:], uint32(v))
			}
		}
	}
	return ptrs, nil
}

// ReadModel loads a model file (format by extension: .lp, .mps) from data
// into the current Highs object via Highs_readModel. The file is visible to
// HiGHS as /<name> only for the duration of the call.
func (in *Instance) ReadModel(ctx context.Context, name string, data []byte) error {
	path := "/" + name
	in.state.fs.put(path, data)
	defer in.state.fs.remove(path)
	p, err := in.putName(path)
	if err != nil {
		return err
	}
	r, err := in.call(ctx, expReadModel, in.h, uint64(p))
	return in.checkStatus("Highs_readModel", r, err)
}
