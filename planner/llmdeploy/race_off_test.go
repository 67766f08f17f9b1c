//go:build !race

package llmdeploy

// raceOn: see race_on_test.go.
const raceOn = false
