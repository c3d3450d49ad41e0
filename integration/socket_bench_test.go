package integration

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkSocketThroughput: 1 GiB through a unix socketpair and through a
// TCP connection over loopback inside a runsc sandbox (default buffers), in
// 128 MiB and 512 MiB: what the sandbox's socket memory bound
// (22-socket-buffer-limit.patch) must leave as it was. Reports MiB/s.
//
//	go test -run '^$' -bench SocketThroughput -benchtime 3x ./integration/
func BenchmarkSocketThroughput(b *testing.B) {
	d := startDaemon(b, "runsc", "")
	for _, mem := range []int{128, 512} {
		sb := d.create(map[string]any{"memoryMB": mem, "timeout": 600})
		for _, kind := range []string{"unix", "tcp"} {
			b.Run(fmt.Sprintf("%s/mem=%dMB", kind, mem), func(b *testing.B) {
				var rates []float64
				for i := 0; i < b.N; i++ {
					out, code, err := sb.runErr("user", throughput+" "+kind, 120*time.Second)
					f := strings.Fields(out)
					if err != nil || code != 0 || len(f) != 2 || f[0] != "1073741824" {
						b.Fatalf("%s: %q %d %v", kind, out, code, err)
					}
					secs, _ := strconv.ParseFloat(f[1], 64)
					rates = append(rates, 1024/secs)
				}
				b.ReportMetric(medianF(rates), "MiB/s")
			})
		}
		d.deleteQuiet(sb.ID)
	}
}

// throughput (python, argument unix or tcp) sends 1 GiB in 1 MiB writes from
// a thread and reads it; prints the bytes read and the seconds taken.
const throughput = `python3 -c "
import socket, sys, threading, time
if sys.argv[1] == 'unix': a, b = socket.socketpair()
else:
    l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen(1)
    a = socket.create_connection(l.getsockname()); b, _ = l.accept()
def w():
    buf, n = bytes(1 << 20), 0
    while n < 1 << 30: n += a.send(buf[:(1 << 30) - n])
    a.shutdown(socket.SHUT_WR)
t0 = time.time(); th = threading.Thread(target=w); th.start()
buf, got = bytearray(1 << 20), 0
while True:
    k = b.recv_into(buf)
    if not k: break
    got += k
th.join(); print(got, round(time.time() - t0, 3))"`

func medianF(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
