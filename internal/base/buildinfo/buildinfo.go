// Package buildinfo is the one answer to "which plan is this": the version and commit the
// Makefile stamps into the binary (-ldflags -X, from git describe and rev-parse), else the
// module version and VCS stamp `go build` embeds. `plan version`, the provenance a plan
// records and the servers' version endpoints (the OpenAI API's GET /version) all read it,
// so they never disagree.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// stampVersion and stampCommit are set by the Makefile's build: a build with
// -buildvcs=false, or from a source tree without .git, records no VCS stamp, and `go build`
// gives the main module the version "(devel)". Empty: fall back to the build info.
var stampVersion, stampCommit string

// Info is the binary's module, version and commit.
type Info struct {
	Module   string
	Version  string
	Revision string
	Modified bool
}

// Read returns the stamped version and commit, else the build info's.
func Read() Info {
	v := Info{Module: "github.com/plan-dev/plan", Version: "(devel)"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path != "" {
			v.Module = bi.Main.Path
		}
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if stampVersion != "" {
		v.Version = stampVersion
	}
	if stampCommit != "" && stampCommit != v.Revision {
		v.Revision, v.Modified = stampCommit, strings.HasSuffix(stampVersion, "-dirty")
	}
	return v
}

// Version is the version `plan version` prints first.
func Version() string { return Read().Version }

// SetStamp stamps version and commit as the Makefile's build does, for the tests of the
// commands and servers that print them, and returns what restores the previous stamp.
func SetStamp(version, commit string) (restore func()) {
	v, c := stampVersion, stampCommit
	stampVersion, stampCommit = version, commit
	return func() { stampVersion, stampCommit = v, c }
}
