package cli

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// cobra's argument-count messages ("accepts 1 arg(s), received 0"), read
// back so that they can be said in the command's own words.
var (
	reExact   = regexp.MustCompile(`^accepts (\d+) arg\(s\), received (\d+)$`)
	reMin     = regexp.MustCompile(`^requires at least (\d+) arg\(s\), only received (\d+)$`)
	reMax     = regexp.MustCompile(`^accepts at most (\d+) arg\(s\), received (\d+)$`)
	reBetween = regexp.MustCompile(`^accepts between (\d+) and (\d+) arg\(s\), received (\d+)$`)
	reUnknown = regexp.MustCompile(`^unknown command "([^"]*)" for "([^"]*)"`)
)

// cobraUsageError is the message for an error cobra found before the
// command ran: what was wrong, in the command's words, then its usage line
// and where to read more.
func cobraUsageError(cmd *cobra.Command, err error) string {
	msg := strings.TrimSpace(err.Error())
	if cmd == nil {
		return "actoviq: " + strings.ReplaceAll(msg, "\n", " ") + "\n"
	}
	path := cmd.CommandPath()
	names := argNames(cmd)
	got := func(s string) int { n, _ := strconv.Atoi(s); return n }
	switch m := reExact.FindStringSubmatch(msg); {
	case m != nil && got(m[2]) < got(m[1]) && len(names) == got(m[1]):
		msg = "missing " + strings.Join(names[got(m[2]):], " and ")
	case m != nil && got(m[1]) == 0:
		msg = fmt.Sprintf("takes no arguments, got %d", got(m[2]))
	case m != nil:
		msg = fmt.Sprintf("takes %s, got %d argument%s", argList(names, got(m[1])), got(m[2]), plural(got(m[2])))
	}
	if m := reMin.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("needs at least %s, got %d", argList(names, got(m[1])), got(m[2]))
	}
	if m := reMax.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("takes at most %s, got %d", argList(names, got(m[1])), got(m[2]))
	}
	if m := reBetween.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("takes %s to %s arguments, got %s", m[1], m[2], m[3])
	}
	if m := reUnknown.FindStringSubmatch(msg); m != nil && !cmd.HasAvailableSubCommands() {
		msg = fmt.Sprintf("takes no arguments, got %q", m[1])
	} else if m != nil {
		line := fmt.Sprintf("unknown command %q", m[1])
		if i := strings.Index(msg, "Did you mean this?"); i >= 0 {
			alts := strings.Fields(msg[i+len("Did you mean this?"):])
			line += " (did you mean " + strings.Join(alts, " or ") + "?)"
		}
		msg = line
	}
	msg = strings.ReplaceAll(msg, "\n", " ")
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", path, msg)
	usage := cmd.UseLine()
	if cmd.HasAvailableSubCommands() {
		usage = path + " COMMAND [flags]"
	}
	fmt.Fprintf(&b, "usage: %s\n", usage)
	fmt.Fprintf(&b, "see: %s --help\n", path)
	return b.String()
}

// argNames are the positional arguments a command's Use line names
// ("approve RUN CALL" → RUN, CALL).
func argNames(cmd *cobra.Command) []string {
	var out []string
	for _, f := range strings.Fields(cmd.Use)[1:] {
		if strings.HasPrefix(f, "[") || strings.HasPrefix(f, "(") || strings.HasPrefix(f, "-") || strings.HasPrefix(f, "|") {
			if strings.HasPrefix(f, "(") {
				break
			}
			continue
		}
		if f == strings.ToUpper(f) {
			out = append(out, f)
		}
	}
	return out
}

func argList(names []string, n int) string {
	if len(names) == n && n > 0 {
		return strings.Join(names, " ")
	}
	return fmt.Sprintf("%d argument%s", n, plural(n))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// groupRunE makes a command that only groups others fail on an unknown
// subcommand (cobra would print the help and exit 0), and print its help
// when called alone.
func groupRunE(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if alts := cmd.SuggestionsFor(args[0]); len(alts) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(alts, "\n\t")
	}
	return fmt.Errorf("%s", msg)
}
