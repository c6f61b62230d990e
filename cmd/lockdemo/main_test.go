package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRun_EmbeddedExperimentPasses(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-workers", "5", "-rounds", "2", "-hold", "1ms"}, &stdout, &stderr)
	assert.Equal(t, 0, code, "stderr: %s", stderr.String())
	out := stdout.String()
	assert.Contains(t, out, "10 acquisitions (want 10)")
	assert.Contains(t, out, "never two holders at once: true")
	assert.Contains(t, out, "taken in sequence order (FIFO): true")
	assert.Equal(t, 10, strings.Count(out, " holds /lockdemo/"))
}

func TestRun_BadInputExitsTwo(t *testing.T) {
	for _, args := range [][]string{{"-nope"}, {"-workers", "0"}, {"extra"}} {
		var stderr bytes.Buffer
		assert.Equal(t, 2, run(context.Background(), args, io.Discard, &stderr), "args %q", args)
		assert.NotEmpty(t, stderr.String())
	}
}
