package admin_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/admin"
	"github.com/zkraft/zkraft/server/servertest"
)

// BenchmarkClientOps measures creates and gets on one server's client
// port in three phases of the same run: before its admin listener starts,
// with the listener idle, and with it scraped (/metrics and
// /commands/monitor) every 100ms, 150 times as often as Prometheus's
// default 15s. The differences are what the listener costs.
func BenchmarkClientOps(b *testing.B) {
	srv := servertest.NewServer(b)
	c := connect(b, srv.ConnectString())
	_, err := c.Create("/bench", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(b, err)
	n := 0
	ops := func(phase string) {
		b.Run("create/"+phase, func(b *testing.B) {
			for range b.N {
				n++
				if _, err := c.Create("/bench/"+strconv.Itoa(n), []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
		b.Run("get/"+phase, func(b *testing.B) {
			for range b.N {
				if _, _, err := c.Get("/bench"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
	ops("no-listener")
	a := startAdmin(b, srv.Server)
	ops("listener-idle")
	stop := scrapeEvery(a, 100*time.Millisecond)
	ops("listener-scraped")
	stop()
}

// scrapeEvery fetches /metrics and /commands/monitor every d until the
// returned function is called.
func scrapeEvery(a *admin.Admin, d time.Duration) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		client := &http.Client{Timeout: 5 * time.Second}
		defer client.CloseIdleConnections()
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			for _, path := range []string{"/metrics", "/commands/monitor"} {
				if resp, err := client.Get(a.URL() + path); err == nil {
					resp.Body.Close()
				}
			}
		}
	}()
	return func() { close(quit); <-done }
}

// BenchmarkScrape measures one scrape of /metrics and of
// /commands/monitor.
func BenchmarkScrape(b *testing.B) {
	a := startAdmin(b, servertest.NewServer(b).Server)
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	for _, path := range []string{"/metrics", "/commands/monitor"} {
		b.Run(path, func(b *testing.B) {
			for range b.N {
				resp, err := client.Get(a.URL() + path)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
}
