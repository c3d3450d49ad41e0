package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sbx-dev/sbx/client"
	"github.com/sbx-dev/sbx/internal/dockerfile"
)

// pollInterval is how often a build's status is polled, as the SDK does.
var pollInterval = 200 * time.Millisecond

// runBuild requests the build, uploads the files it lacks, starts it and
// follows its log; it returns the exit code.
func runBuild(ctx context.Context, c *client.Client, o *buildOpts, spec *dockerfile.Spec, ignore []string, std stdio) int {
	b, err := c.RequestTemplateBuild(ctx, client.TemplateBuildRequest{Name: o.name, Tags: o.tags, CPUCount: o.cpu, MemoryMB: o.memoryMB})
	if err != nil {
		return buildFailed(ctx, std, "requesting the build", err)
	}
	fmt.Fprintf(std.err, "Template created with ID: %s, Build ID: %s\n", cellText(b.TemplateID), cellText(b.BuildID))
	if err := uploadFiles(ctx, c, b.TemplateID, spec, o.context, ignore, std); err != nil {
		return buildFailed(ctx, std, "uploading files", err)
	}
	if err := c.StartTemplateBuild(ctx, b.TemplateID, b.BuildID, clientSpec(spec)); err != nil {
		return buildFailed(ctx, std, "starting the build", err)
	}
	st, err := c.FollowTemplateBuild(ctx, b.TemplateID, b.BuildID, pollInterval,
		func(es []client.BuildLogEntry) { printEntries(std.err, es) })
	if err != nil {
		return buildFailed(ctx, std, "following the build", err)
	}
	if st.Status != "ready" {
		printReason(std.err, st.Reason)
		if h := o.from.hint(); h != "" && st.Reason != nil && st.Reason.Step == "base" {
			fmt.Fprintln(std.err, "sbx template build:", h)
		}
		return 1
	}
	fmt.Fprintf(std.err, "template %s ready: %s\n", o.name, cellText(b.TemplateID))
	fmt.Fprintln(std.out, cellText(b.TemplateID))
	return 0
}

func buildFailed(ctx context.Context, std stdio, what string, err error) int {
	if ctx.Err() != nil {
		fmt.Fprintln(std.err, "sbx template build: interrupted")
		return exitIntr
	}
	fmt.Fprintf(std.err, "sbx template build: %s: %s\n", what, termText(explain(err)))
	return 1
}

// uploadFiles uploads the files of each COPY step the daemon does not have.
func uploadFiles(ctx context.Context, c *client.Client, templateID string, spec *dockerfile.Spec, contextDir string, ignore []string, std stdio) error {
	done := map[string]bool{}
	for _, st := range spec.Steps {
		if st.Type != "COPY" || done[st.FilesHash] {
			continue
		}
		done[st.FilesHash] = true
		u, err := c.TemplateFileUpload(ctx, templateID, st.FilesHash)
		if err != nil {
			return err
		}
		if u.Present || u.URL == "" {
			fmt.Fprintf(std.err, "Skipping upload of '%s', already cached\n", st.Args[0])
			continue
		}
		if err := uploadOne(ctx, c, u, contextDir, st.Args[0], ignore); err != nil {
			return fmt.Errorf("%s: %w", st.Args[0], err)
		}
		fmt.Fprintf(std.err, "Uploaded '%s'\n", st.Args[0])
	}
	return nil
}

// uploadOne spools the archive of src to a temporary file, so that its
// size is known, and uploads it.
func uploadOne(ctx context.Context, c *client.Client, u *client.FileUpload, contextDir, src string, ignore []string) error {
	f, err := os.CreateTemp("", "sbx-context-*.tar.gz")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := dockerfile.TarContext(f, contextDir, src, ignore); err != nil {
		return err
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return c.UploadTemplateFiles(ctx, u, f, size)
}

func printEntries(w io.Writer, es []client.BuildLogEntry) {
	for _, e := range es {
		level := ""
		if e.Level == "warn" || e.Level == "error" {
			level = e.Level + ": "
		}
		fmt.Fprintf(w, "%s %s%s\n", e.Timestamp.Local().Format("15:04:05"), level, termText(e.Message))
	}
}

// printReason says why a build failed.
func printReason(w io.Writer, r *client.BuildReason) {
	if r == nil {
		fmt.Fprintln(w, "sbx template build: the build failed (no reason given)")
		return
	}
	// r.LogEntries repeats the log's tail, which was printed already.
	if r.Step != "" {
		fmt.Fprintf(w, "sbx template build: the build failed at step %s: %s\n", termText(r.Step), termText(r.Message))
		return
	}
	fmt.Fprintf(w, "sbx template build: the build failed: %s\n", termText(r.Message))
}
