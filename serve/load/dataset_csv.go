package load

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/plan-dev/plan/formats"
)

// BurstGPT's columns (spec §4): Timestamp (s from the trace's start), Model, Request tokens,
// Response tokens, Total tokens, Log Type; later releases add more. Only the token columns
// are required.
const (
	burstCol    = "Request tokens"
	burstOutCol = "Response tokens"
	burstModel  = "Model"
	burstTime   = "Timestamp"
	// burstGPTModel is the model vllm bench keeps of BurstGPT's rows.
	burstGPTModel = "GPT-4"
)

// ReadBurstGPT reads a BurstGPT CSV as vllm bench serve does (spec §4): with a Model column
// only the GPT-4 rows, and only rows whose Response tokens > 0 (failed requests carry 0);
// rows with Request tokens 0 are skipped too (an empty prompt cannot be sent). With a
// Timestamp column the entries are timed (--dataset-timestamps). Errors name the file, the
// line and the column.
func ReadBurstGPT(name string, data []byte) (*Dataset, error) {
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s:1: header: %v", name, csvErr(err))
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	for _, c := range []string{burstCol, burstOutCol} {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("%s:1: header: no %q column (BurstGPT: Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type)", name, c)
		}
	}
	mi, hasModel := col[burstModel]
	ti, timed := col[burstTime]
	d := &Dataset{Name: DatasetBurstGPT, Path: name, Timed: timed}
	rows := 0
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			line := 0
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = pe.Line
			}
			return nil, fmt.Errorf("%s:%d: %v", name, line, csvErr(err))
		}
		line, _ := r.FieldPos(0)
		field := func(c string, i int) (string, error) {
			if i >= len(rec) {
				return "", fmt.Errorf("%s:%d: %s: missing (the line has %d columns, the header %d)", name, line, c, len(rec), len(head))
			}
			return strings.TrimSpace(rec[i]), nil
		}
		in, err := csvTokens(name, line, burstCol, rec, col[burstCol], field)
		if err != nil {
			return nil, err
		}
		out, err := csvTokens(name, line, burstOutCol, rec, col[burstOutCol], field)
		if err != nil {
			return nil, err
		}
		var at time.Duration
		if timed {
			s, err := field(burstTime, ti)
			if err != nil {
				return nil, err
			}
			v, perr := strconv.ParseFloat(s, 64)
			if perr != nil || !(v >= 0 && v < 1e9) {
				return nil, fmt.Errorf("%s:%d: %s: %q: want seconds >= 0", name, line, burstTime, s)
			}
			at = time.Duration(math.Round(v * 1e9))
		}
		rows++
		if hasModel {
			m, err := field(burstModel, mi)
			if err != nil {
				return nil, err
			}
			if m != burstGPTModel {
				continue
			}
		}
		if in < 1 || out < 1 {
			continue
		}
		d.Entries = append(d.Entries, DatasetEntry{At: at, InputTokens: in, OutputTokens: out})
	}
	if len(d.Entries) == 0 {
		return nil, fmt.Errorf("%s: none of its %d rows is a GPT-4 request with Request tokens and Response tokens > 0 (the rows vllm bench uses)", name, rows)
	}
	// Times count from the earliest kept row; BurstGPT is in time order, a file that is not
	// is put in it for a timed replay.
	t0 := d.Entries[0].At
	for _, e := range d.Entries {
		t0 = min(t0, e.At)
	}
	for i := range d.Entries {
		d.Entries[i].At -= t0
	}
	sort.SliceStable(d.Entries, func(i, j int) bool { return d.Entries[i].At < d.Entries[j].At })
	return d, nil
}

func csvTokens(name string, line int, c string, rec []string, i int, field func(string, int) (string, error)) (int, error) {
	s, err := field(c, i)
	if err != nil {
		return 0, err
	}
	v, perr := strconv.Atoi(s)
	if perr != nil {
		// Some exports write counts as floats ("12.0").
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != math.Trunc(f) {
			return 0, fmt.Errorf("%s:%d: %s: %q: want an integer token count", name, line, c, s)
		}
		v = int(f)
	}
	if v < 0 || v > formats.MaxTraceTokens {
		return 0, fmt.Errorf("%s:%d: %s: %q: must be in [0, %d]", name, line, c, s, formats.MaxTraceTokens)
	}
	return v, nil
}

func csvErr(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Err
	}
	if err == io.EOF {
		return errors.New("empty file")
	}
	return err
}

// ReadAzure reads an Azure LLM inference trace CSV (TIMESTAMP,ContextTokens,GeneratedTokens:
// Splitwise's 2023 and DynamoLLM's 2024 traces, spec §4) with formats' reader: timed entries
// of ContextTokens prompt and GeneratedTokens output tokens.
func ReadAzure(name string, data []byte) (*Dataset, error) {
	t, err := formats.ParseAzureLLMTrace(name, data)
	if err != nil {
		return nil, err
	}
	d := &Dataset{Name: DatasetAzure, Path: name, Timed: true, Entries: make([]DatasetEntry, len(t.Requests))}
	for i, r := range t.Requests {
		d.Entries[i] = DatasetEntry{At: time.Duration(r.TimeUs) * time.Microsecond, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens}
	}
	return d, nil
}

// ReadDataset reads the file of a --dataset-name (not random).
func ReadDataset(kind, name string, data []byte, shareGPTOutputLen int) (*Dataset, error) {
	switch kind {
	case DatasetShareGPT:
		return ReadShareGPT(name, data, shareGPTOutputLen)
	case DatasetBurstGPT:
		return ReadBurstGPT(name, data)
	case DatasetMooncake:
		return ReadMooncake(name, data)
	case DatasetAzure:
		return ReadAzure(name, data)
	}
	return nil, fmt.Errorf("--dataset-name: %q: want one of %s", kind, strings.Join(DatasetNames, ", "))
}
