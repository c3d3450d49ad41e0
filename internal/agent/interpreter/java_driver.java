// sbx code-interpreter driver for Java contexts.
//
// Started by the Go server (internal/agent/interpreter) as the sandbox user,
// as a single-file source program (java java_driver.java). It drives the
// JDK's own JShell API (jdk.jshell) with the local execution engine: one JVM,
// one JShell state, so classes, methods and variables defined in one cell are
// there in the next. A cell is split into snippets the way jshell does it;
// the value of a final expression is the cell's main result (text/plain).
//
// Same line protocol as kernel_driver.py: requests on stdin, events on fd 3.
// SIGINT stops the running cell (JShell.stop) instead of ending the JVM.
// Errors: a compile error is CompilationException (value: the diagnostics);
// an exception thrown by the cell is named by its simple class name, its
// value the message and its traceback the stack trace.

import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import jdk.jshell.*;
import jdk.jshell.SourceCodeAnalysis.CompletionInfo;
import jdk.jshell.SourceCodeAnalysis.Completeness;

class Driver {
    static PrintStream events;
    static volatile boolean silent;
    static final AtomicBoolean interrupted = new AtomicBoolean();
    static volatile boolean evaluating; // a cell is under way (compiled or run)
    static JShell js;
    static int count;

    public static void main(String[] args) throws Exception {
        events = new PrintStream(new FileOutputStream(descriptor(3)), true, StandardCharsets.UTF_8);
        BufferedReader requests = new BufferedReader(new InputStreamReader(new FileInputStream(FileDescriptor.in), StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new Sink("stdout"), true, StandardCharsets.UTF_8);
        PrintStream err = new PrintStream(new Sink("stderr"), true, StandardCharsets.UTF_8);
        System.setIn(new ByteArrayInputStream(new byte[0]));
        System.setOut(out);
        System.setErr(err);
        try {
            js = JShell.builder().executionEngine("local").in(System.in).out(out).err(err).build();
            js.eval("int __sbx_warmup = 0;"); // loads the compiler before the first cell
        } catch (Throwable t) {
            send("{\"type\":\"fatal\",\"error\":" + q("cannot start jshell: " + t) + "}");
            System.exit(1);
        }
        sun.misc.Signal.handle(new sun.misc.Signal("INT"), s -> {
            interrupted.set(true);
            stopper();
        });
        send("{\"type\":\"ready\"}");
        for (String line; (line = requests.readLine()) != null; ) {
            Map<String, Object> req = Json.object(line);
            if (!"execute".equals(req.get("op"))) continue;
            execute(String.valueOf(req.getOrDefault("code", "")), Boolean.TRUE.equals(req.get("silent")));
            send("{\"type\":\"done\"}");
        }
        System.exit(0);
    }

    // descriptor is an inherited file descriptor (java.io opened to this
    // program by the launch flags): /proc/self/fd/N cannot be reopened by
    // the sandbox user when the pipe is the agent's.
    static FileDescriptor descriptor(int n) throws ReflectiveOperationException {
        FileDescriptor d = new FileDescriptor();
        java.lang.reflect.Field f = FileDescriptor.class.getDeclaredField("fd");
        f.setAccessible(true);
        f.setInt(d, n);
        return d;
    }

    // stopper stops the interrupted cell's code (JShell.stop), and again
    // every 50 ms until the cell ends: an interrupt that came while a
    // snippet was still being compiled found no code to stop, and the
    // snippet then ran on (a loop until the agent's grace restarted the
    // context, its state lost).
    static void stopper() {
        Thread t = new Thread(() -> {
            while (evaluating && interrupted.get()) {
                js.stop();
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "sbx-stopper");
        t.setDaemon(true);
        t.start();
    }

    // execute runs one cell: its snippets in order until one fails.
    static void execute(String code, boolean quiet) {
        silent = quiet;
        interrupted.set(false);
        evaluating = true;
        if (!quiet) send("{\"type\":\"count\",\"count\":" + (++count) + "}");
        try {
            SourceCodeAnalysis sca = js.sourceCodeAnalysis();
            String rest = code;
            while (!rest.isBlank()) {
                CompletionInfo ci = sca.analyzeCompletion(rest);
                String src = ci.completeness().isComplete() ? ci.source() : rest;
                rest = ci.completeness().isComplete() ? ci.remaining() : "";
                if (ci.completeness() == Completeness.EMPTY) break;
                if (!run(src, rest.isBlank(), quiet)) break;
            }
        } finally {
            evaluating = false;
            System.out.flush();
            System.err.flush();
            silent = false;
        }
    }

    // run evaluates one snippet; false when it failed (the cell stops).
    static boolean run(String src, boolean last, boolean quiet) {
        for (SnippetEvent e : js.eval(src)) {
            if (e.causeSnippet() != null) continue;
            if (e.status() == Snippet.Status.REJECTED) {
                if (!quiet) error("CompilationException", diagnostics(e.snippet()), List.of(diagnostics(e.snippet())));
                return false;
            }
            if (e.exception() != null) {
                if (!quiet) exception(e.exception());
                return false;
            }
            if (interrupted.get()) {
                if (!quiet) error("KeyboardInterrupt", "execution interrupted", List.of("KeyboardInterrupt: execution interrupted"));
                return false;
            }
            if (last && !quiet && e.value() != null && isExpression(e.snippet())) {
                send("{\"type\":\"result\",\"main\":true,\"data\":{\"text/plain\":" + q(display(e.snippet(), e.value())) + "}}");
            }
        }
        return true;
    }

    static boolean isExpression(Snippet s) {
        return s.kind() == Snippet.Kind.EXPRESSION
            || s.subKind() == Snippet.SubKind.TEMP_VAR_EXPRESSION_SUBKIND;
    }

    // display is jshell's value string, a String shown as its text (as
    // IJava shows it), not as a quoted literal.
    static String display(Snippet s, String value) {
        String type = s instanceof VarSnippet v ? v.typeName() : s instanceof ExpressionSnippet x ? x.typeName() : "";
        if ((type.equals("String") || type.equals("java.lang.String")) && value.length() >= 2 && value.startsWith("\"") && value.endsWith("\"")) {
            return unquote(value.substring(1, value.length() - 1));
        }
        return value;
    }

    static String diagnostics(Snippet s) {
        return js.diagnostics(s).map(d -> d.getMessage(Locale.ROOT)).collect(Collectors.joining("\n"));
    }

    static void exception(JShellException ex) {
        String cls = ex instanceof EvalException ee ? ee.getExceptionClassName() : ex.getClass().getName();
        String msg = ex.getMessage() == null ? "" : ex.getMessage();
        List<String> tb = new ArrayList<>();
        tb.add(cls + (msg.isEmpty() ? "" : ": " + msg));
        for (StackTraceElement el : ex.getStackTrace()) tb.add("\tat " + el);
        if (ex instanceof UnresolvedReferenceException ure) {
            cls = "UnresolvedReferenceException";
            msg = "unresolved reference in " + ure.getSnippet().source().strip();
            tb = List.of(cls + ": " + msg);
        }
        error(cls.substring(cls.lastIndexOf('.') + 1).replace('$', '.'), msg, tb);
    }

    static void error(String name, String value, List<String> traceback) {
        send("{\"type\":\"error\",\"name\":" + q(name) + ",\"value\":" + q(value) + ",\"traceback\":["
            + traceback.stream().map(Driver::q).collect(Collectors.joining(",")) + "]}");
    }

    static synchronized void send(String json) {
        events.print(json + "\n");
        events.flush();
    }

    // Sink turns what a cell prints into stdout/stderr events.
    static final class Sink extends OutputStream {
        final String type;

        Sink(String type) { this.type = type; }

        @Override public void write(int b) { write(new byte[] {(byte) b}, 0, 1); }

        @Override public void write(byte[] b, int off, int len) {
            if (silent || len == 0) return;
            send("{\"type\":\"" + type + "\",\"text\":" + q(new String(b, off, len, StandardCharsets.UTF_8)) + "}");
        }
    }

    // q quotes s as a JSON string.
    static String q(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                    else b.append(c);
                }
            }
        }
        return b.append('"').toString();
    }

    // unquote undoes the escapes of a Java string literal.
    static String unquote(String s) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c != '\\' || i + 1 == s.length()) {
                b.append(c);
                continue;
            }
            char n = s.charAt(++i);
            switch (n) {
                case 'n' -> b.append('\n');
                case 't' -> b.append('\t');
                case 'r' -> b.append('\r');
                case 'b' -> b.append('\b');
                case 'f' -> b.append('\f');
                case 'u' -> {
                    if (i + 4 < s.length()) {
                        b.append((char) Integer.parseInt(s.substring(i + 1, i + 5), 16));
                        i += 4;
                    }
                }
                default -> {
                    if (n >= '0' && n <= '7') {
                        int j = i;
                        while (j < s.length() && j < i + 3 && s.charAt(j) >= '0' && s.charAt(j) <= '7') j++;
                        b.append((char) Integer.parseInt(s.substring(i, j), 8));
                        i = j - 1;
                    } else {
                        b.append(n);
                    }
                }
            }
        }
        return b.toString();
    }
}

// Json reads the driver's requests: one flat object of strings and booleans.
final class Json {
    static Map<String, Object> object(String s) {
        Map<String, Object> m = new HashMap<>();
        int[] pos = {skip(s, 0)};
        expect(s, pos, '{');
        while (true) {
            pos[0] = skip(s, pos[0]);
            if (s.charAt(pos[0]) == '}') return m;
            String k = string(s, pos);
            pos[0] = skip(s, pos[0]);
            expect(s, pos, ':');
            pos[0] = skip(s, pos[0]);
            m.put(k, value(s, pos));
            pos[0] = skip(s, pos[0]);
            if (s.charAt(pos[0]) == ',') pos[0]++;
        }
    }

    static Object value(String s, int[] pos) {
        char c = s.charAt(pos[0]);
        if (c == '"') return string(s, pos);
        for (String lit : new String[] {"true", "false", "null"}) {
            if (s.startsWith(lit, pos[0])) {
                pos[0] += lit.length();
                return lit.equals("null") ? null : Boolean.valueOf(lit);
            }
        }
        int start = pos[0];
        while (pos[0] < s.length() && "+-.0123456789eE".indexOf(s.charAt(pos[0])) >= 0) pos[0]++;
        if (start == pos[0]) throw new IllegalArgumentException("bad JSON at " + start);
        return s.substring(start, pos[0]);
    }

    static String string(String s, int[] pos) {
        expect(s, pos, '"');
        StringBuilder b = new StringBuilder();
        while (true) {
            char c = s.charAt(pos[0]++);
            if (c == '"') return b.toString();
            if (c != '\\') {
                b.append(c);
                continue;
            }
            char e = s.charAt(pos[0]++);
            switch (e) {
                case 'n' -> b.append('\n');
                case 't' -> b.append('\t');
                case 'r' -> b.append('\r');
                case 'b' -> b.append('\b');
                case 'f' -> b.append('\f');
                case 'u' -> {
                    b.append((char) Integer.parseInt(s.substring(pos[0], pos[0] + 4), 16));
                    pos[0] += 4;
                }
                default -> b.append(e);
            }
        }
    }

    static void expect(String s, int[] pos, char c) {
        if (s.charAt(pos[0]) != c) throw new IllegalArgumentException("expected " + c + " at " + pos[0]);
        pos[0]++;
    }

    static int skip(String s, int i) {
        while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
        return i;
    }
}
