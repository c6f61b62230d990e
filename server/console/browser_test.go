//go:build browser

// The browser test drives the console in headless Chromium (Debian's
// chromium package) against a three-member cluster with a lock workload,
// checks what the page shows, and saves screenshots. Run it with
//
//	go test -tags browser -run TestBrowser ./server/console/
//
// Screenshots go to $CONSOLE_SCREENSHOTS if set, else to the test's
// temporary directory (named in the log).
package console_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/lockrecipe"
	"github.com/zkraft/zkraft/server/console"
	"github.com/zkraft/zkraft/server/servertest"
)

// browser starts headless Chromium for the test and returns a tab's
// context; both end with the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("no Chromium: apt-get install chromium")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 960), chromedp.Flag("hide-scrollbars", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancel)
	require.NoError(t, chromedp.Do(ctx)) // start the browser, without a deadline
	return ctx
}

// run runs browser steps, each bounded by 20 seconds in all.
func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, steps...); err != nil {
		// What the page showed, for the log.
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		html, _ := chromedp.Run(dctx, chromedp.Evaluate[string](`document.body.outerHTML`))
		t.Fatalf("%s: %v\npage:\n%s", what, err, html)
	}
}

// value runs one action that returns a value.
func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	require.NoError(t, err, what)
	return v
}

// shot saves a screenshot of the viewport as dir/name.
func shot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png := value(t, ctx, "screenshot "+name, chromedp.CaptureScreenshot())
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), png, 0o644))
	t.Logf("screenshot %s", filepath.Join(dir, name))
}

// texts returns the text of every element the CSS selector matches.
func texts(t *testing.T, ctx context.Context, selector string) []string {
	t.Helper()
	return value(t, ctx, "read "+selector, chromedp.Evaluate[[]string](
		fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.textContent)`, selector)))
}

// css is a CSS selector for the first element it matches.
func css(format string, args ...any) chromedp.CSS { return chromedp.CSS(fmt.Sprintf(format, args...)) }

const configJSON = `{"service":"orders","replicas":3,"limits":{"cpu":"500m","memory":"256Mi"},"features":["audit","retry"]}`

func TestBrowser_Console(t *testing.T) {
	dir := os.Getenv("CONSOLE_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	c := servertest.NewCluster(t, 3)
	leader := c.Leader()
	require.GreaterOrEqual(t, leader, 0)
	cons, err := console.New(console.FromServer(c.Server(leader)), console.Options{})
	require.NoError(t, err)
	hs := httptest.NewServer(cons)
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })

	// A small application's tree.
	app := connect(t, c.Addr(leader))
	for _, n := range []struct {
		path string
		data string
	}{
		{"/app", ""}, {"/app/config", configJSON},
		{"/app/motd", "Deploy freeze from Friday 18:00.\nAsk #ops before any change."},
		{"/app/token", "\x00\x01\x02\x03\xfe\xff binary\x10"}, {"/services", ""},
	} {
		_, err := app.Create(n.path, []byte(n.data), 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	_, err = app.Create("/app/secret", []byte("s3cr3t"), 0, zk.DigestACL(zk.PermAll, "ops", "pw"))
	require.NoError(t, err)
	// A service instance: a session with ephemerals and a watch.
	svc := connect(t, c.Addr((leader+1)%3))
	for _, p := range []string{"/services/orders-1", "/services/orders-1-health"} {
		_, err := svc.Create(p, []byte(`{"host":"10.0.0.7","port":8080}`), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	_, _, _, err = svc.GetW("/app/config")
	require.NoError(t, err)

	// The lock workload: one holder and five waiters on /locks/orders,
	// each its own session, queued one after the other; and a read-write
	// lock with two readers holding and a writer waiting.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sessions []string
	for i := range 6 {
		conn := connect(t, c.Addr(i%3))
		sessions = append(sessions, hexID(conn.SessionID()))
		m := lockrecipe.NewMutex(conn, "/locks/orders")
		if i == 0 {
			require.NoError(t, m.Lock(ctx))
		} else {
			go m.Lock(ctx) // waits until the test ends
		}
		c.Inspect(leader).WaitForChildren("/locks/orders", i+1)
	}
	for i, write := range []bool{false, false, true} {
		rw := lockrecipe.NewRWMutex(connect(t, c.Addr(leader)), "/locks/report")
		if write {
			go rw.Lock(ctx)
		} else {
			require.NoError(t, rw.RLock(ctx))
		}
		c.Inspect(leader).WaitForChildren("/locks/report", i+1)
	}

	// A running workload beside it, as lockdemo's: four workers take
	// /locks/churn in turn, each holding it for 20ms, until the test ends.
	for i := range 4 {
		m := lockrecipe.NewMutex(connect(t, c.Addr(i%3)), "/locks/churn")
		go func() {
			for ctx.Err() == nil {
				if m.Lock(ctx) != nil {
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(20 * time.Millisecond):
				}
				m.Unlock()
			}
		}()
	}

	tab := browser(t)
	base := hs.URL + "/"

	// The tree, with /app and /services expanded.
	run(t, tab, "open the tree",
		chromedp.Navigate(base+"#tree:/locks/orders"),
		chromedp.WaitVisible(css(`#detail-path`)),
		chromedp.WaitVisible(css(`li.node[data-path="/locks/orders"] li.node`)),
		chromedp.WaitVisible(css(`#live.on`)),
		chromedp.Click(css(`li.node[data-path="/app"] > .row > .toggle`)),
		chromedp.WaitVisible(css(`li.node[data-path="/app/config"]`)),
		chromedp.Click(css(`li.node[data-path="/locks/orders"] > .row > .toggle`)),
		chromedp.WaitNotPresent(css(`li.node[data-path="/locks/orders"] li.node`)),
		chromedp.Click(css(`li.node[data-path="/services"] > .row > .toggle`)),
		chromedp.WaitVisible(css(`li.node[data-path="/services/orders-1"]`)),
	)
	assert.Equal(t, []string{"config", "motd", "secret", "token"}, texts(t, tab, `li.node[data-path="/app"] > ul > li > .row .name`))
	assert.Equal(t, []string{"ephemeral", "ephemeral"}, texts(t, tab, `li.node[data-path="/services"] > ul > li > .row .kind`))
	assert.Equal(t, []string{"churn", "orders", "report"}, texts(t, tab, `li.node[data-path="/locks"] > ul > li > .row .name`))

	// A live update: a create shows without reloading the page.
	_, err = app.Create("/app/feature-flags", []byte(`{"newCheckout":true}`), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	run(t, tab, "the created node appears", chromedp.WaitVisible(css(`li.node[data-path="/app/feature-flags"]`)))
	assert.Equal(t, []string{"config", "feature-flags", "motd", "secret", "token"}, texts(t, tab, `li.node[data-path="/app"] > ul > li > .row .name`))
	run(t, tab, "select an ephemeral",
		chromedp.Click(css(`li.node[data-path="/services/orders-1"] > .row > .name`)),
		chromedp.WaitVisible(css(`#data-view[data-format="json"]`)))
	shot(t, tab, dir, "tree.png")

	// A selected node: JSON pretty printed, Stat and ACL.
	run(t, tab, "select /app/config",
		chromedp.Click(css(`li.node[data-path="/app/config"] > .row > .name`)),
		chromedp.WaitVisible(css(`#detail-path`)),
		chromedp.WaitVisible(css(`#data-view[data-format="json"]`)))
	assert.Contains(t, value(t, tab, "data", chromedp.TextContent(css(`#data-view`))), "\"limits\": {\n    \"cpu\": \"500m\"")
	assert.Equal(t, []string{"0", fmt.Sprint(len(configJSON))}, texts(t, tab, `#stat tr[data-key="version"] td, #stat tr[data-key="dataLength"] td`))
	assert.Equal(t, []string{"world", "anyone", "cdrwa"}, texts(t, tab, `#acl td`))
	shot(t, tab, dir, "node.png")

	// Live: a change of the selected node's data shows at once.
	_, err = app.Set("/app/config", []byte(`{"service":"orders","replicas":5}`), 0)
	require.NoError(t, err)
	run(t, tab, "the new data shows", chromedp.WaitVisible(css(`#stat tr[data-key="version"][data-value="1"]`)))
	assert.Contains(t, value(t, tab, "data", chromedp.TextContent(css(`#data-view`))), `"replicas": 5`)

	// Binary data as hex; data the console may not read.
	run(t, tab, "select /app/token",
		chromedp.Click(css(`li.node[data-path="/app/token"] > .row > .name`)),
		chromedp.WaitVisible(css(`#data-view[data-format="hex"]`)))
	assert.Contains(t, value(t, tab, "hex", chromedp.TextContent(css(`#data-view`))), "00 01 02 03 fe ff 20 62")
	run(t, tab, "select /app/secret",
		chromedp.Click(css(`li.node[data-path="/app/secret"] > .row > .name`)),
		chromedp.WaitVisible(css(`#data p.error`)))
	assert.Contains(t, value(t, tab, "denied", chromedp.TextContent(css(`#data p.error`))), "lack READ")

	// Sessions: the service's session with its ephemerals.
	svcID := hexID(svc.SessionID())
	row := fmt.Sprintf(`#sessions tr[data-session="%s"]`, svcID)
	run(t, tab, "open sessions",
		chromedp.Click(css(`nav a[data-tab="sessions"]`)),
		chromedp.WaitVisible(chromedp.CSS(row)),
		chromedp.SendKeys(css(`#session-filter`), "/services"),
		chromedp.WaitVisible(css(`#session-count`)))
	run(t, tab, "filter sessions", chromedp.WaitNotPresent(css(`#sessions tbody tr:not([data-session="%s"])`, svcID)))
	assert.Equal(t, []string{"/services/orders-1", "/services/orders-1-health"}, texts(t, tab, row+` .ephemerals li`))
	// Its client is connected to another member: its watch is held there,
	// not on the leader whose console this is.
	assert.Empty(t, texts(t, tab, row+` .watches li`))
	shot(t, tab, dir, "sessions.png")

	// The lock queue: the holder, then the five waiters in order.
	q := `.lock[data-path="/locks/orders"] tr.contender`
	run(t, tab, "open locks",
		chromedp.Click(css(`nav a[data-tab="locks"]`)),
		chromedp.WaitVisible(css(`.lock[data-path="/locks/report"]`)),
		chromedp.WaitVisible(chromedp.CSS(q)))
	assert.Equal(t, []string{"holder", "waiting", "waiting", "waiting", "waiting", "waiting"}, texts(t, tab, q+" .role"))
	names := value(t, tab, "names", chromedp.Evaluate[[]string](fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.dataset.name)`, q)))
	owners := value(t, tab, "owners", chromedp.Evaluate[[]string](fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.querySelector(".session").textContent)`, q)))
	assert.Equal(t, sessions, owners, "holder then waiters, in the order they queued")
	var want []string
	for _, l := range c.Inspect(leader).Locks() {
		if l.Path == "/locks/orders" {
			for _, n := range l.Nodes {
				want = append(want, n.Name)
			}
		}
	}
	assert.Equal(t, want, names)
	assert.Equal(t, []string{"holder", "holder", "waiting"}, texts(t, tab, `.lock[data-path="/locks/report"] tr.contender .role`))
	run(t, tab, "the churning lock shows", chromedp.WaitVisible(css(`.lock[data-path="/locks/churn"] tr.contender`)))
	shot(t, tab, dir, "locks.png")

	// Live on the locks view: the holder lets go, the first waiter holds.
	conn := connect(t, c.Addr(leader))
	require.NoError(t, conn.Delete("/locks/orders/"+names[0], -1))
	run(t, tab, "the next waiter holds",
		chromedp.WaitVisible(css(`.lock[data-path="/locks/orders"] tr.contender.holder[data-name="%s"]`, names[1])))

	// The cluster: three members, their roles, applied zxids and lag.
	run(t, tab, "open cluster",
		chromedp.Click(css(`nav a[data-tab="cluster"]`)),
		chromedp.WaitVisible(css(`#members tr[data-id="3"]`)),
		chromedp.WaitNotPresent(css(`#members td.applied:not([data-known])`)))
	assert.Equal(t, []string{"1", "2", "3"}, value(t, tab, "ids", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#members tbody tr")].map(e => e.dataset.id)`)))
	wantRoles := []string{"follower", "follower", "follower"}
	wantRoles[leader] = "leader"
	assert.Equal(t, wantRoles, texts(t, tab, `#members tbody td.role`))
	for _, a := range texts(t, tab, `#members tbody td.applied`) {
		assert.NotEqual(t, "?", a, "the leader knows every member's applied zxid")
	}
	shot(t, tab, dir, "cluster.png")

	// Writes, where enabled, go through the server's ACL checks.
	writable, err := console.New(console.FromServer(c.Server(leader)), console.Options{Writes: true})
	require.NoError(t, err)
	ws := httptest.NewServer(writable)
	t.Cleanup(func() { ws.CloseClientConnections(); ws.Close() }) // the tab's event stream is still open
	run(t, tab, "set data from the page",
		chromedp.Navigate(ws.URL+"/#tree:/app/motd"),
		chromedp.WaitVisible(css(`#set-data`)),
		chromedp.SetValue(css(`#set-data`), "Deploys are open again."),
		chromedp.Click(css(`#set-button`)),
		chromedp.WaitVisible(css(`#stat tr[data-key="version"][data-value="1"]`)))
	data, _, err := app.Get("/app/motd")
	require.NoError(t, err)
	assert.Equal(t, "Deploys are open again.", string(data))
	run(t, tab, "create under a node the console may not write",
		chromedp.Navigate(ws.URL+"/#tree:/app/secret"),
		chromedp.WaitVisible(css(`#child-name`)),
		chromedp.SetValue(css(`#child-name`), "kid"),
		chromedp.Click(css(`#create-child`)),
		chromedp.WaitVisible(css(`#write-result.error`)))
	assert.Contains(t, value(t, tab, "write result", chromedp.TextContent(css(`#write-result`))), "not authenticated")
	assert.Nil(t, c.Inspect(leader).Node("/app/secret/kid"))
}
