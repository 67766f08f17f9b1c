package qlmbench

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"

	"github.com/plan-dev/plan/formats"
)

// The bench runs anywhere: the Azure conversation trace (CC-BY 4.0, see
// data/NOTICE: Patel et al., Splitwise, ISCA 2024) and the bundled profile travel inside the
// binary; --trace and --profile replace them.
var (
	//go:embed data/azure-llm-2023-conv.csv.gz
	embeddedTraceGz []byte
	//go:embed data/profile.json
	embeddedProfile []byte
)

// EmbeddedTrace names the embedded trace in the output and in --trace's help.
const EmbeddedTrace = "embedded azure-llm-2023-conv.csv (Azure LLM inference trace 2023, CC-BY 4.0; cite Patel et al., Splitwise, ISCA 2024)"

// EmbeddedProfile names the embedded profile.
const EmbeddedProfile = "embedded qlm-a100 profile (copy of testdata/qlm/profile.json)"

// LoadTrace reads the trace at path, or the embedded Azure conversation trace when path is
// empty.
func LoadTrace(path string) ([]row, error) {
	if path != "" {
		return Load(path)
	}
	zr, err := gzip.NewReader(bytes.NewReader(embeddedTraceGz))
	if err != nil {
		return nil, fmt.Errorf("embedded trace: %v", err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("embedded trace: %v", err)
	}
	return Parse("azure-llm-2023-conv.csv (embedded)", bytes.NewReader(data))
}

// LoadProfile reads the LLM profile at path, or the embedded one when path is empty.
func LoadProfile(path string) (*formats.Profile, error) {
	if path != "" {
		return formats.ReadInto[*formats.Profile](path, nil)
	}
	return formats.DecodeInto[*formats.Profile]("profile.json (embedded)", embeddedProfile, nil)
}

// dataLine says which data a run used (printed and in the report).
func dataLine(trace, profile string) (string, string) {
	if trace == "" {
		trace = EmbeddedTrace
	}
	if profile == "" {
		profile = EmbeddedProfile
	}
	return trace, profile
}
