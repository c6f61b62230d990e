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
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/lockrecipe"
	"github.com/zkraft/zkraft/server"
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
	start := time.Now()
	defer func() { t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond)) }()
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

// The page re-renders as the tree changes, so the steps below find their
// element in the page's own JavaScript, at once, rather than by DOM node
// ids that a re-render makes stale between two protocol calls.

// until waits until the JavaScript expression cond is true.
func until(cond string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		for {
			ok, err := chromedp.Evaluate[bool](cond)(ctx, t)
			if err != nil || ok {
				return chromedp.Void{}, err
			}
			select {
			case <-ctx.Done():
				return chromedp.Void{}, fmt.Errorf("waiting for %s: %w", cond, ctx.Err())
			case <-tick.C:
			}
		}
	}
}

// visible waits until an element matches the CSS selector and is shown.
func visible(format string, args ...any) chromedp.Action[chromedp.Void] {
	return until(fmt.Sprintf(`(e => e !== null && e.getClientRects().length > 0)(document.querySelector(%q))`, fmt.Sprintf(format, args...)))
}

// shows waits until the detail pane shows the node at path.
func shows(path string) chromedp.Action[chromedp.Void] {
	return until(fmt.Sprintf(`document.querySelector("#detail-path")?.firstChild?.textContent === %q`, path))
}

// gone waits until no element matches the CSS selector.
func gone(sel string) chromedp.Action[chromedp.Void] {
	return until(fmt.Sprintf(`document.querySelector(%q) === null`, sel))
}

// click clicks the element the CSS selector matches, once it is shown.
func click(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(visible("%s", sel), js(fmt.Sprintf(`document.querySelector(%q).click()`, sel)))
}

// setValue types value into the input the CSS selector matches, once it
// is shown.
func setValue(sel, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(visible("%s", sel),
		js(fmt.Sprintf(`(e => { e.value = %q; e.dispatchEvent(new Event("input")); })(document.querySelector(%q))`, value, sel)))
}

// js runs a JavaScript statement.
func js(code string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[any](code)(ctx, t)
		if errors.Is(err, chromedp.ErrJSUndefined) {
			err = nil
		}
		return chromedp.Void{}, err
	}
}

// text returns the text of the element the CSS selector matches.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return value(t, ctx, "read "+sel, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).textContent`, sel)))
}

const configJSON = `{"service":"orders","replicas":3,"limits":{"cpu":"500m","memory":"256Mi"},"features":["audit","retry"]}`

// scene is the browser test's cluster, workload and browser tab.
type scene struct {
	c        *servertest.Cluster
	leader   int
	app      *zk.Conn    // the application's client, on the leader
	svc      [2]*zk.Conn // two service instances': on the leader, on a follower
	sessions []string    // the /locks/orders contenders' sessions, in queue order
	tab      context.Context
	base     string    // the leader's console
	consoles [3]string // every member's
	dir      string    // where screenshots go
}

func TestBrowser_Console(t *testing.T) {
	s := newScene(t)
	s.checkTree(t)
	s.checkNode(t)
	s.checkSessions(t)
	s.checkLocks(t)
	s.checkCluster(t)
	s.checkWrites(t)
}

// newScene starts a three-member cluster with a console on its leader,
// fills a small application's tree, starts the lock workload and opens a
// browser tab.
func newScene(t *testing.T) *scene {
	s := &scene{dir: os.Getenv("CONSOLE_SCREENSHOTS")}
	if s.dir == "" {
		s.dir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(s.dir, 0o755))
	s.c = servertest.NewCluster(t, 3)
	s.leader = s.c.Leader()
	require.GreaterOrEqual(t, s.leader, 0)
	for i := range s.consoles {
		s.consoles[i] = serveConsole(t, s.c.Server(i), console.Options{})
		s.c.Server(i).SetConsoleURL(s.consoles[i])
	}
	s.base = s.consoles[s.leader]
	s.fillTree(t)
	s.lockWorkload(t)
	s.tab = browser(t)
	return s
}

// serveConsole serves a console of srv; the test's end closes its event
// streams too.
func serveConsole(t *testing.T, srv *server.Server, opts console.Options) string {
	cons, err := console.New(console.FromServer(srv), opts)
	require.NoError(t, err)
	hs := httptest.NewServer(cons)
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return hs.URL + "/"
}

// fillTree makes a small application's tree, and a service instance: a
// session with ephemerals and a watch.
func (s *scene) fillTree(t *testing.T) {
	s.app = connect(t, s.c.Addr(s.leader))
	for _, n := range []struct {
		path string
		data string
	}{
		{"/app", ""}, {"/app/config", configJSON},
		{"/app/motd", "Deploy freeze from Friday 18:00.\nAsk #ops before any change."},
		{"/app/token", "\x00\x01\x02\x03\xfe\xff binary\x10"}, {"/services", ""},
	} {
		_, err := s.app.Create(n.path, []byte(n.data), 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	_, err := s.app.Create("/app/secret", []byte("s3cr3t"), 0, zk.DigestACL(zk.PermAll, "ops", "pw"))
	require.NoError(t, err)
	for i, member := range []int{s.leader, (s.leader + 1) % 3} {
		s.svc[i] = connect(t, s.c.Addr(member))
		name := fmt.Sprintf("/services/orders-%d", i+1)
		for _, p := range []string{name, name + "-health"} {
			_, err := s.svc[i].Create(p, []byte(fmt.Sprintf(`{"host":"10.0.0.%d","port":8080}`, 7+i)), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
			require.NoError(t, err)
		}
	}
	// Watches on nodes that stay as they are until the sessions are shown.
	for _, conn := range s.svc {
		_, _, _, err = conn.GetW("/app/motd")
		require.NoError(t, err)
		_, _, _, err = conn.ChildrenW("/services")
		require.NoError(t, err)
	}
}

// lockWorkload queues one holder and five waiters on /locks/orders, each
// its own session, one after the other; two readers holding and a writer
// waiting on /locks/report; and, as lockdemo runs, four workers taking
// /locks/churn in turn, each holding it for 20ms, until the test ends.
func (s *scene) lockWorkload(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() }) // before the clients close
	for i := range 6 {
		conn := connect(t, s.c.Addr(i%3))
		s.sessions = append(s.sessions, hexID(conn.SessionID()))
		m := lockrecipe.NewMutex(conn, "/locks/orders", lockrecipe.WithData([]byte(fmt.Sprintf("orders-worker-%d pid %d", i+1, 4100+i))))
		if i == 0 {
			require.NoError(t, m.Lock(ctx))
		} else {
			wg.Go(func() { m.Lock(ctx) }) // waits until the test ends
		}
		s.c.Inspect(s.leader).WaitForChildren("/locks/orders", i+1)
	}
	for i, write := range []bool{false, false, true} {
		rw := lockrecipe.NewRWMutex(connect(t, s.c.Addr(s.leader)), "/locks/report")
		if write {
			wg.Go(func() { rw.Lock(ctx) })
		} else {
			require.NoError(t, rw.RLock(ctx))
		}
		s.c.Inspect(s.leader).WaitForChildren("/locks/report", i+1)
	}
	for i := range 4 {
		m := lockrecipe.NewMutex(connect(t, s.c.Addr(i%3)), "/locks/churn")
		wg.Go(func() { churn(ctx, m) })
	}
	// A semaphore of two leases, both held; a third taker waits for one,
	// holding the semaphore's mutex; a fourth waits for the mutex.
	for i := range 4 {
		sem := lockrecipe.NewSemaphore(connect(t, s.c.Addr(i%3)), "/locks/exports", 2,
			lockrecipe.WithData([]byte(fmt.Sprintf("export-%d", i+1))))
		if i < 2 {
			_, err := sem.Acquire(ctx)
			require.NoError(t, err)
			continue
		}
		wg.Go(func() { sem.Acquire(ctx) })
		if i == 2 {
			s.c.Inspect(s.leader).WaitForChildren("/locks/exports/leases", 3)
		} else {
			s.c.Inspect(s.leader).WaitForChildren("/locks/exports/locks", 2)
		}
	}
}

// churn takes the lock and holds it for 20ms, again and again until ctx
// ends.
func churn(ctx context.Context, m *lockrecipe.Mutex) {
	for m.Lock(ctx) == nil {
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
		m.Unlock()
	}
}

// checkTree expands nodes, watches a create arrive, and shoots the tree.
func (s *scene) checkTree(t *testing.T) {
	run(t, s.tab, "open the tree",
		chromedp.Navigate(s.base+"#tree:/locks/orders"),
		visible(`#detail-path`),
		visible(`li.node[data-path="/locks/orders"] li.node`),
		visible(`#live.on`),
		click(`li.node[data-path="/app"] > .row > .toggle`),
		visible(`li.node[data-path="/app/config"]`),
		click(`li.node[data-path="/locks/orders"] > .row > .toggle`),
		gone(`li.node[data-path="/locks/orders"] li.node`),
		click(`li.node[data-path="/services"] > .row > .toggle`),
		visible(`li.node[data-path="/services/orders-1"]`),
	)
	assert.Equal(t, []string{"config", "motd", "secret", "token"}, texts(t, s.tab, `li.node[data-path="/app"] > ul > li > .row .name`))
	assert.Equal(t, []string{"ephemeral", "ephemeral", "ephemeral", "ephemeral"}, texts(t, s.tab, `li.node[data-path="/services"] > ul > li > .row .kind`))
	assert.Equal(t, []string{"churn", "exports", "orders", "report"}, texts(t, s.tab, `li.node[data-path="/locks"] > ul > li > .row .name`))

	// A live update: a create shows without reloading the page.
	_, err := s.app.Create("/app/feature-flags", []byte(`{"newCheckout":true}`), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	run(t, s.tab, "the created node appears", visible(`li.node[data-path="/app/feature-flags"]`))
	assert.Equal(t, []string{"config", "feature-flags", "motd", "secret", "token"}, texts(t, s.tab, `li.node[data-path="/app"] > ul > li > .row .name`))
	run(t, s.tab, "select an ephemeral",
		click(`li.node[data-path="/services/orders-1"] > .row > .name`),
		shows("/services/orders-1"),
		visible(`#data-view[data-format="json"]`))
	shot(t, s.tab, s.dir, "tree.png")
}

// checkNode shows a node's data as JSON, text and hex, its Stat and ACL,
// and a change of its data as it happens.
func (s *scene) checkNode(t *testing.T) {
	run(t, s.tab, "select /app/config",
		click(`li.node[data-path="/app/config"] > .row > .name`),
		shows("/app/config"),
		visible(`#detail-path`),
		visible(`#data-view[data-format="json"]`))
	assert.Contains(t, text(t, s.tab, `#data-view`), "\"limits\": {\n    \"cpu\": \"500m\"")
	assert.Equal(t, []string{"0", fmt.Sprint(len(configJSON))}, texts(t, s.tab, `#stat tr[data-key="version"] td, #stat tr[data-key="dataLength"] td`))
	assert.Equal(t, []string{"world", "anyone", "cdrwa"}, texts(t, s.tab, `#acl td`))
	shot(t, s.tab, s.dir, "node.png")

	// Live: a change of the selected node's data shows at once.
	_, err := s.app.Set("/app/config", []byte(`{"service":"orders","replicas":5}`), 0)
	require.NoError(t, err)
	run(t, s.tab, "the new data shows", visible(`#stat tr[data-key="version"][data-value="1"]`))
	assert.Contains(t, text(t, s.tab, `#data-view`), `"replicas": 5`)

	// Binary data as hex; data the console may not read.
	run(t, s.tab, "select /app/token",
		click(`li.node[data-path="/app/token"] > .row > .name`),
		shows("/app/token"),
		visible(`#data-view[data-format="hex"]`))
	assert.Contains(t, text(t, s.tab, `#data-view`), "00 01 02 03 fe ff 20 62")
	run(t, s.tab, "select /app/secret",
		click(`li.node[data-path="/app/secret"] > .row > .name`),
		shows("/app/secret"),
		visible(`#data p.error`))
	assert.Contains(t, text(t, s.tab, `#data p.error`), "lack READ")
}

// checkSessions finds the services' sessions with their ephemerals, and
// the watches of the one whose client is connected to this member.
func (s *scene) checkSessions(t *testing.T) {
	rows := [2]string{}
	for i, conn := range s.svc {
		rows[i] = fmt.Sprintf(`#sessions tr[data-session="%s"]`, hexID(conn.SessionID()))
	}
	run(t, s.tab, "open sessions",
		click(`nav a[data-tab="sessions"]`),
		visible("%s", rows[0]),
		setValue(`#session-filter`, "/services"),
		until(`document.querySelectorAll("#sessions tbody tr").length === 2`))
	assert.Equal(t, []string{"/services/orders-1", "/services/orders-1-health"}, texts(t, s.tab, rows[0]+` .ephemerals li`))
	assert.Equal(t, []string{"/services/orders-2", "/services/orders-2-health"}, texts(t, s.tab, rows[1]+` .ephemerals li`))
	assert.Equal(t, []string{"data one-shot /app/motd", "child one-shot /services"}, texts(t, s.tab, rows[0]+` .watches li`))
	// The other's client is connected to a follower: its watches are held
	// there, not on the leader whose console this is.
	assert.Empty(t, texts(t, s.tab, rows[1]+` .watches li`))
	// Where each client is: the leader (this page) and the follower, linked
	// to its console; each client's address, heard from lately, with time
	// left before it would expire.
	follower := (s.leader + 1) % 3
	assert.Equal(t, []string{fmt.Sprintf("%d (this)", s.leader+1), fmt.Sprint(follower + 1)},
		texts(t, s.tab, rows[0]+` td.member, `+rows[1]+` td.member`))
	assert.Equal(t, s.consoles[follower]+"#sessions", value(t, s.tab, "link", chromedp.Evaluate[string](
		fmt.Sprintf(`document.querySelector(%q).href`, rows[1]+` td.member a`))))
	for _, row := range rows {
		assert.Contains(t, text(t, s.tab, row+` td.client`), "127.0.0.1:")
		assert.NotEqual(t, "?", text(t, s.tab, row+` td.heard`))
		assert.Regexp(t, `^[0-9.]+ s$`, text(t, s.tab, row+` td.expires`))
	}
	shot(t, s.tab, s.dir, "sessions.png")
}

// checkLocks shows the holder and the five waiters in order, and the next
// waiter taking over.
func (s *scene) checkLocks(t *testing.T) {
	q := `.lock[data-path="/locks/orders"] tr.contender`
	run(t, s.tab, "open locks",
		click(`nav a[data-tab="locks"]`),
		visible(`.lock[data-path="/locks/report"]`),
		visible("%s", q))
	assert.Equal(t, []string{"holder", "waiting", "waiting", "waiting", "waiting", "waiting"}, texts(t, s.tab, q+" .role"))
	names := value(t, s.tab, "names", chromedp.Evaluate[[]string](fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.dataset.name)`, q)))
	owners := value(t, s.tab, "owners", chromedp.Evaluate[[]string](fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.querySelector(".session").textContent)`, q)))
	assert.Equal(t, s.sessions, owners, "holder then waiters, in the order they queued")
	var want []string
	for _, l := range s.c.Inspect(s.leader).Locks() {
		if l.Path == "/locks/orders" {
			for _, n := range l.Nodes {
				want = append(want, n.Name)
			}
		}
	}
	assert.Equal(t, want, names)
	// Who holds and who waits: each node's data, its session's client and
	// the member it is connected to.
	var wantData []string
	for i := range 6 {
		wantData = append(wantData, fmt.Sprintf("orders-worker-%d pid %d", i+1, 4100+i))
	}
	assert.Equal(t, wantData, texts(t, s.tab, q+" td.data"))
	members := texts(t, s.tab, q+" td.member")
	for i, m := range members {
		want := fmt.Sprint(i%3 + 1)
		if i%3 == s.leader {
			want += " (this)"
		}
		assert.Equal(t, want, m, "contender %d is connected to member %d", i, i%3+1)
	}
	for _, c := range texts(t, s.tab, q+" td.client") {
		assert.Contains(t, c, "127.0.0.1:")
	}
	assert.Equal(t, []string{"holder", "holder", "waiting"}, texts(t, s.tab, `.lock[data-path="/locks/report"] tr.contender .role`))
	assert.Equal(t, []string{"holds a lease", "holds a lease", "waiting for a lease"},
		texts(t, s.tab, `.lock[data-path="/locks/exports/leases"] tr.contender .role`))
	assert.Equal(t, []string{"export-1", "export-2", "export-3"}, texts(t, s.tab, `.lock[data-path="/locks/exports/leases"] td.data`))
	assert.Equal(t, []string{"holder", "waiting"}, texts(t, s.tab, `.lock[data-path="/locks/exports/locks"] tr.contender .role`))
	run(t, s.tab, "the churning lock shows", visible(`.lock[data-path="/locks/churn"] tr.contender`))
	shot(t, s.tab, s.dir, "locks.png")
	run(t, s.tab, "scroll to the semaphore", js(`document.querySelector('.lock[data-path="/locks/exports/leases"]').scrollIntoView()`))
	shot(t, s.tab, s.dir, "semaphore.png")

	// Live on the locks view: the holder lets go, the first waiter holds.
	conn := connect(t, s.c.Addr(s.leader))
	require.NoError(t, conn.Delete("/locks/orders/"+names[0], -1))
	run(t, s.tab, "the next waiter holds",
		visible(`.lock[data-path="/locks/orders"] tr.contender.holder[data-name="%s"]`, names[1]))
}

// checkCluster shows the three members, their roles, applied zxids and lag.
func (s *scene) checkCluster(t *testing.T) {
	run(t, s.tab, "open cluster",
		click(`nav a[data-tab="cluster"]`),
		visible(`#members tr[data-id="3"]`),
		gone(`#members td.applied:not([data-known])`))
	assert.Equal(t, []string{"1", "2", "3"}, value(t, s.tab, "ids", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#members tbody tr")].map(e => e.dataset.id)`)))
	wantRoles := []string{"follower", "follower", "follower"}
	wantRoles[s.leader] = "leader"
	assert.Equal(t, wantRoles, texts(t, s.tab, `#members tbody td.role`))
	for _, a := range texts(t, s.tab, `#members tbody td.applied`) {
		assert.NotEqual(t, "?", a, "the leader knows every member's applied zxid")
	}
	shot(t, s.tab, s.dir, "cluster.png")

	// A follower's console shows every member too, from the leader, with
	// links to the others' consoles.
	follower := (s.leader + 1) % 3
	run(t, s.tab, "a follower's cluster tab",
		chromedp.Navigate(s.consoles[follower]+"#cluster"),
		visible(`#members tr[data-id="3"]`),
		gone(`#members td.applied:not([data-known])`))
	assert.Equal(t, wantRoles, texts(t, s.tab, `#members tbody td.role`))
	links := value(t, s.tab, "links", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#members td.console a")].map(a => a.href)`))
	var wantLinks []string
	for i, u := range s.consoles {
		if i != follower {
			wantLinks = append(wantLinks, u+"#cluster")
		}
	}
	assert.Equal(t, wantLinks, links)
	shot(t, s.tab, s.dir, "cluster-follower.png")
}

// checkWrites writes through a writable console: the server's ACL checks
// decide, as for any client.
func (s *scene) checkWrites(t *testing.T) {
	writable := serveConsole(t, s.c.Server(s.leader), console.Options{Writes: true})
	run(t, s.tab, "set data from the page",
		chromedp.Navigate(writable+"#tree:/app/motd"),
		shows("/app/motd"),
		visible(`#set-data`),
		setValue(`#set-data`, "Deploys are open again."),
		click(`#set-button`),
		visible(`#stat tr[data-key="version"][data-value="1"]`))
	data, _, err := s.app.Get("/app/motd")
	require.NoError(t, err)
	assert.Equal(t, "Deploys are open again.", string(data))
	run(t, s.tab, "create under a node the console may not write",
		js(`location.hash = "#tree:/app/secret"`), // the same page: no load
		shows("/app/secret"),
		visible(`#child-name`),
		setValue(`#child-name`, "kid"),
		click(`#create-child`),
		visible(`#write-result.error`))
	assert.Contains(t, text(t, s.tab, `#write-result`), "not authenticated")
	assert.Nil(t, s.c.Inspect(s.leader).Node("/app/secret/kid"))
}
