// Package buildinfo holds the version, commit and build date stamped into
// the binary by the linker (-ldflags "-X ...").
package buildinfo

import "runtime/debug"

// Set at link time by goreleaser or the Makefile.
var (
	// Version is the release version, "dev" for local builds.
	Version = "dev"
	// Commit is the git commit the binary was built from.
	Commit = ""
	// Date is the build date in RFC 3339.
	Date = ""
)

// CommitOrVCS returns Commit, falling back to the VCS revision that the Go
// toolchain records in the binary.
func CommitOrVCS() string {
	if Commit != "" {
		return Commit
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}
