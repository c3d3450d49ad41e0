package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/alecthomas/kong"
)

// completionCmd is `sbx completion bash|zsh`: a completion script made from
// the command line's own model (commands and flags), completing sandbox IDs
// from `sbx ls -q` for the commands that take them.
type completionCmd struct {
	Shell string `arg:"" enum:"bash,zsh" help:"bash or zsh"`
}

// Help is the long help of sbx completion.
func (*completionCmd) Help() string {
	return "Load it with: source <(sbx completion bash)   (zsh: source <(sbx completion zsh))"
}

// idCommands take sandbox IDs as arguments.
var idCommands = []string{"exec", "shell", "inspect", "logs", "metrics", "kill", "rm", "pause", "resume", "fork"}

// passthroughWords complete the commands that parse their own flags.
var passthroughWords = map[string]string{"template": "build ls inspect rm --help"}

func (c *completionCmd) run(e *env) int {
	if c.Shell == "zsh" {
		fmt.Fprintln(e.std.out, "autoload -U +X bashcompinit && bashcompinit")
	}
	writeBashCompletion(e.std.out, e.model)
	return 0
}

func writeBashCompletion(w io.Writer, app *kong.Application) {
	var cmds []string
	cases := map[string]string{}
	for _, n := range app.Children {
		if n.Hidden {
			continue
		}
		names := append([]string{n.Name}, n.Aliases...)
		cmds = append(cmds, names...)
		words := flagWords(n)
		if pw, ok := passthroughWords[n.Name]; ok {
			words = pw
		}
		for _, name := range names {
			cases[name] = words
		}
	}
	sort.Strings(cmds)
	fmt.Fprintf(w, "_sbx() {\n  local cur=${COMP_WORDS[COMP_CWORD]} cmd= i\n"+
		"  for ((i=1; i<COMP_CWORD; i++)); do\n    case ${COMP_WORDS[i]} in -*) ;; *) cmd=${COMP_WORDS[i]}; break ;; esac\n  done\n"+
		"  local words\n  case $cmd in\n    '') words=%q ;;\n", strings.Join(cmds, " ")+" "+flagWords(app.Node))
	keys := make([]string, 0, len(cases))
	for k := range cases {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "    %s) words=%q ;;\n", k, cases[k])
	}
	fmt.Fprintf(w, "  esac\n  case $cur in -*) ;; *)\n    case $cmd in %s)\n"+
		"      words=\"$words $(sbx ls -q 2>/dev/null)\" ;; esac ;;\n  esac\n"+
		"  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n}\ncomplete -o default -F _sbx sbx\n", strings.Join(idCommands, "|"))
}

// flagWords are the --long and -s forms of n's flags and its parents'.
func flagWords(n *kong.Node) string {
	var words []string
	for _, group := range n.AllFlags(true) {
		for _, f := range group {
			words = append(words, "--"+f.Name)
			if f.Short != 0 {
				words = append(words, "-"+string(f.Short))
			}
		}
	}
	return strings.Join(words, " ")
}
