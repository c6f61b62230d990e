package admin_test

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fourLetter sends a four-letter word to addr and returns the answer.
func fourLetter(t testing.TB, addr, word string) string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = nc.Write([]byte(word))
	require.NoError(t, err)
	out, err := io.ReadAll(nc)
	require.NoError(t, err)
	return string(out)
}
