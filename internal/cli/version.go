package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionText is what actoviq version and actoviq --version print: the
// module version (or "(devel)" for a build from a checkout), the VCS commit
// the build was made from, when known, and the Go toolchain.
func versionText() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return fmt.Sprintf("actoviq (unknown version: no build info)\n%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	s := "actoviq " + v
	if info.Main.Path != "" {
		s += " (" + info.Main.Path + ")"
	}
	s += "\n"
	var rev, at, modified string
	for _, kv := range info.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.time":
			at = kv.Value
		case "vcs.modified":
			modified = kv.Value
		}
	}
	if rev != "" {
		s += "commit " + rev
		if at != "" {
			s += " (" + at + ")"
		}
		if modified == "true" {
			s += ", with uncommitted changes"
		}
		s += "\n"
	}
	return s + fmt.Sprintf("%s %s/%s\n", info.GoVersion, runtime.GOOS, runtime.GOARCH)
}

func (e *env) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit it was built from and the Go toolchain",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := io.WriteString(e.stdout, versionText())
			return err
		},
	}
}
