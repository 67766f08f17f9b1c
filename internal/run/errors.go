package run

import (
	"errors"
	"fmt"
)

// Exit codes of the contract in DESIGN.md.
const (
	ExitOK      = 0
	ExitFailure = 1 // a check or regression failed
	ExitUsage   = 2 // bad input or usage
)

// ExitError carries an exit code with the error that caused it.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// UsageError marks bad input or usage (exit 2); an error that already carries a code keeps it.
func UsageError(err error) error {
	if err == nil {
		return nil
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return err
	}
	return &ExitError{Code: ExitUsage, Err: err}
}

// UsageErrorf formats a usage error.
func UsageErrorf(format string, args ...any) error { return UsageError(fmt.Errorf(format, args...)) }

// CheckFailed marks a failed check or regression (exit 1).
func CheckFailed(err error) error { return &ExitError{Code: ExitFailure, Err: err} }
