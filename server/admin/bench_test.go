package admin_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
)

// BenchmarkClientOps measures creates and gets on the client port with no
// admin listener, and with one that is scraped (/metrics and
// /commands/monitor) every 100ms, 150 times as often as Prometheus's
// default 15s: the difference is what the listener costs.
func BenchmarkClientOps(b *testing.B) {
	for _, withAdmin := range []bool{false, true} {
		name := "plain"
		if withAdmin {
			name = "admin-scraped"
		}
		srv := servertest.NewServer(b)
		if withAdmin {
			a := startAdmin(b, srv.Server)
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				client := &http.Client{Timeout: 5 * time.Second}
				tick := time.NewTicker(100 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						client.CloseIdleConnections()
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
			b.Cleanup(func() { close(stop); <-done })
		}
		c := connect(b, srv.ConnectString())
		_, err := c.Create("/bench", nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(b, err)
		n := 0
		b.Run("create/"+name, func(b *testing.B) {
			for range b.N {
				n++
				if _, err := c.Create("/bench/"+strconv.Itoa(n), []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
		b.Run("get/"+name, func(b *testing.B) {
			for range b.N {
				if _, _, err := c.Get("/bench"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
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
