package exitcode

import "errors"

// errSilent marks a failure the command has already reported in full.
var errSilent = errors.New("failure already reported")

// Silent returns an error that only carries an exit code: the process ends
// with code and prints nothing more, since the command has already shown
// the failure (a wrapped program's own stderr, for one).
func Silent(code Code) error { return &Err{Code: code, Err: errSilent} }

// IsSilent reports whether err asks that no message be printed.
func IsSilent(err error) bool { return errors.Is(err, errSilent) }
