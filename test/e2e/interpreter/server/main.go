// Command server runs the code interpreter alone for the end-to-end tests
// (test/e2e/interpreter/run.sh runs it inside a chroot of a test rootfs):
//
//	server [-listen :49999] [-prewarm]
//
// SBX_TEST_TOKEN, when set, is the access token /execute requires. As PID 1
// of a PID namespace it also reaps orphans, as sbx-agent does.
package main

import (
	"flag"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/sbx-dev/sbx/internal/agent/identity"
	"github.com/sbx-dev/sbx/internal/agent/interpreter"
)

func main() {
	listen := flag.String("listen", ":49999", "listen address")
	prewarm := flag.Bool("prewarm", false, "start the default python kernel at once")
	flag.Parse()
	st := identity.NewState()
	if tok := os.Getenv("SBX_TEST_TOKEN"); tok != "" {
		st.Apply(identity.Init{AccessToken: &tok, EnvVars: map[string]string{"SBX_SANDBOX_ENV": "from-init"}})
	}
	srv, err := interpreter.New(interpreter.Config{State: st, Prewarm: *prewarm})
	if err != nil {
		log.Fatal(err)
	}
	if os.Getpid() == 1 {
		go reap()
	}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
		srv.Close()
		os.Exit(0)
	}()
	log.Fatal(http.ListenAndServe(*listen, srv.Handler()))
}

// reap collects every exited child, as an init must.
func reap() {
	ch := make(chan os.Signal, 16)
	signal.Notify(ch, syscall.SIGCHLD)
	for range ch {
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
