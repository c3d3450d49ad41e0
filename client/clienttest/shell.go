package clienttest

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Shell is the default ExecFunc, a tiny interpreter. "/bin/bash -l -c S"
// runs S, a ";"-separated list of simple commands split on spaces; any other
// argv is one simple command. Commands: echo ARGS, err ARGS (to stderr),
// exit N, cat (stdin to stdout), sleep (until killed), env NAME, pwd, whoami.
// Anything else fails with exit code 127, as bash does.
func Shell(ctx context.Context, p *Proc) int {
	script := [][]string{p.Argv}
	if len(p.Argv) == 4 && p.Argv[0] == "/bin/bash" && slices.Equal(p.Argv[1:3], []string{"-l", "-c"}) {
		script = nil
		for _, c := range strings.Split(p.Argv[3], ";") {
			if f := strings.Fields(c); len(f) > 0 {
				script = append(script, f)
			}
		}
	}
	code := 0
	for _, argv := range script {
		if code = builtin(ctx, p, argv); code != 0 || argv[0] == "exit" {
			return code
		}
	}
	return code
}

func builtin(ctx context.Context, p *Proc, argv []string) int {
	line := func(w io.Writer, s string) int { fmt.Fprintln(w, s); return 0 }
	switch argv[0] {
	case "echo":
		return line(p.Stdout, strings.Join(argv[1:], " "))
	case "err":
		return line(p.Stderr, strings.Join(argv[1:], " "))
	case "exit":
		if len(argv) < 2 {
			return 0
		}
		n, _ := strconv.Atoi(argv[1])
		return n
	case "cat":
		_, _ = io.Copy(p.Stdout, p.Stdin)
		return 0
	case "sleep":
		<-ctx.Done()
		return -1
	case "env":
		return line(p.Stdout, p.Envs[strings.Join(argv[1:], "")])
	case "pwd":
		return line(p.Stdout, p.Cwd)
	case "whoami":
		return line(p.Stdout, p.User)
	}
	line(p.Stderr, argv[0]+": command not found")
	return 127
}
