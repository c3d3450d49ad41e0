package integration

import (
	"fmt"
	"time"
)

// heldInBackground is a shell script that writes the python program py to
// /tmp/<name>.py and runs it detached; py takes what it can of a resource,
// writes how much it got to /tmp/<name>.count and holds it. The script
// waits up to wait for that count and prints it.
func heldInBackground(name, py string, wait time.Duration) string {
	return fmt.Sprintf(`cat >/tmp/%[1]s.py <<'PY'
%[2]s
PY
rm -f /tmp/%[1]s.count
setsid nohup python3 /tmp/%[1]s.py >/dev/null 2>&1 &
for i in $(seq %[3]d); do [ -s /tmp/%[1]s.count ] && break; sleep 0.1; done
cat /tmp/%[1]s.count`, name, py, int(wait/(100*time.Millisecond)))
}
