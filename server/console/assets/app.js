// zkraft web console: plain JavaScript, no build step. Every value from the
// server goes into the page as text (textContent), never as markup.
"use strict";

const state = {
  tab: "tree",
  expanded: new Set(["/"]), // paths whose children are shown
  limits: new Map(),        // paths listed beyond the first 1000 children
  selected: null,
  format: null,             // the data view chosen for the selected node
  info: null,
  zxid: 0,
};

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) {
    if (c == null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

async function api(path, opts) {
  const r = await fetch("api/" + path, opts);
  const body = await r.json().catch(() => ({ error: r.statusText }));
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

const q = (p) => encodeURIComponent(p);
const parentOf = (p) => (p.lastIndexOf("/") <= 0 ? "/" : p.slice(0, p.lastIndexOf("/")));

// ---- tree ----

function treeItem(path, name, child) {
  const li = el("li", { class: "node", "data-path": path });
  const toggle = el("span", { class: "toggle" }, child.numChildren > 0 ? (state.expanded.has(path) ? "▾" : "▸") : "");
  const row = el("div", { class: "row" + (state.selected === path ? " selected" : ""), onclick: () => select(path) },
    toggle, el("span", { class: "name" }, name),
    child.kind !== "persistent" ? el("span", { class: "kind " + child.kind }, child.kind) : null,
    child.numChildren > 0 ? el("span", { class: "count" }, "(" + child.numChildren + ")") : null);
  toggle.addEventListener("click", (ev) => { ev.stopPropagation(); toggleNode(path); });
  li.append(row, el("ul"));
  return li;
}

// setCount shows a listed node's number of children on its row.
function setCount(li, total) {
  const row = li.querySelector(":scope > .row");
  let count = row.querySelector(".count");
  if (!count) { count = el("span", { class: "count" }); row.append(count); }
  count.textContent = total > 0 ? "(" + total + ")" : "";
  row.querySelector(".toggle").textContent = total > 0 ? (state.expanded.has(li.dataset.path) ? "▾" : "▸") : "";
}

function findItem(path) {
  return document.querySelector(`li.node[data-path="${CSS.escape(path)}"]`);
}

// listings counts the listings asked for each path, so that one that
// answers after a later one is dropped rather than shown over it.
const listings = new Map();

async function loadChildren(path) {
  let li = findItem(path);
  if (!li) return;
  if (!state.expanded.has(path)) { li.querySelector(":scope > ul").replaceChildren(); return; }
  const asked = (listings.get(path) || 0) + 1;
  listings.set(path, asked);
  let listing, failed;
  try {
    listing = await api("children?path=" + q(path) + (state.limits.has(path) ? "&limit=" + state.limits.get(path) : ""));
  } catch (e) {
    failed = e;
  }
  if (listings.get(path) !== asked) return; // a later listing of path is on its way
  li = findItem(path); // the parent's own listing may have replaced it meanwhile
  if (!li) return;
  const ul = li.querySelector(":scope > ul");
  if (failed) { ul.replaceChildren(el("li", { class: "error" }, failed.message)); return; }
  setCount(li, listing.total);
  // Children already shown keep what is listed under them, so that
  // re-listing a parent does not empty its expanded children meanwhile.
  const before = new Map([...ul.querySelectorAll(":scope > li.node")].map((n) => [n.dataset.path, n]));
  const items = listing.children.map((c) => {
    const item = treeItem(c.path, c.name, c);
    const old = before.get(c.path);
    if (old) item.querySelector(":scope > ul").replaceWith(old.querySelector(":scope > ul"));
    else if (before.size > 0) item.querySelector(".row").classList.add("flash");
    return item;
  });
  if (listing.truncated) {
    const more = listing.total - listing.children.length;
    items.push(el("li", { class: "more" }, el("a", { href: "#", onclick: (ev) => {
      ev.preventDefault();
      state.limits.set(path, listing.children.length + Math.min(more, 10000));
      loadChildren(path);
    } }, `… ${more} more`)));
  }
  ul.replaceChildren(...items);
  for (const c of listing.children) if (state.expanded.has(c.path)) loadChildren(c.path);
}

async function refreshRow(path) {
  // The row's own counts: re-list its parent if shown.
  const parent = parentOf(path);
  if (path !== "/" && state.expanded.has(parent) && findItem(parent)) await loadChildren(parent);
}

function toggleNode(path) {
  if (state.expanded.has(path) && path !== "/") state.expanded.delete(path);
  else state.expanded.add(path);
  refreshRow(path).then(() => loadChildren(path));
}

function select(path) {
  state.selected = path;
  state.format = null;
  document.querySelectorAll(".row.selected").forEach((r) => r.classList.remove("selected"));
  const li = findItem(path);
  if (li) li.querySelector(".row").classList.add("selected");
  history.replaceState(null, "", "#tree:" + path);
  loadDetail();
}

// ---- node detail ----

async function loadDetail() {
  const path = state.selected;
  const d = document.getElementById("detail");
  if (!path) return;
  let n;
  try {
    n = await api("node?path=" + q(path));
  } catch (e) {
    d.replaceChildren(el("h2", { class: "mono" }, path), el("p", { class: "error" }, e.message));
    return;
  }
  if (state.selected !== path) return;
  d.replaceChildren(...[
    el("h2", { class: "mono", id: "detail-path" }, n.path, " ", el("span", { class: "kind " + n.kind }, n.kind)),
    dataView(n), el("div", { class: "columns" }, statView(n), aclView(n)), writeForms(n)].filter((x) => x));
}

function dataView(n) {
  const box = el("div", { id: "data" }, el("h3", {}, "Data"));
  if (!n.data) { box.append(el("p", { class: "error" }, n.dataError)); return box; }
  const data = n.data;
  if (data.format === "empty") { box.append(el("p", { class: "muted", id: "data-view", "data-format": "empty" }, "(no data)")); return box; }
  const formats = [];
  if (data.format === "json") formats.push("json");
  if (data.format === "json" || data.format === "text") formats.push("text");
  formats.push("hex");
  const fmt = formats.includes(state.format) ? state.format : formats[0];
  const bar = el("div", { class: "formats" }, ...formats.map((f) =>
    el("button", { class: f === fmt ? "on" : "", "data-format": f, onclick: () => { state.format = f; loadDetail(); } }, f)),
    el("span", { class: "muted" }, ` ${data.length} bytes, ${data.format}`));
  let body;
  if (fmt === "json") body = el("pre", { id: "data-view", "data-format": "json" }, data.pretty);
  else if (fmt === "text") body = el("pre", { id: "data-view", "data-format": "text" }, data.text);
  else body = el("pre", { id: "data-view", "data-format": "hex" }, data.hex + (data.hexTruncated ? "\n… (first 4096 bytes)" : ""));
  box.append(bar, body);
  return box;
}

function statView(n) {
  const s = n.stat;
  const rows = [
    ["czxid", hex(s.czxid)], ["mzxid", hex(s.mzxid)], ["pzxid", hex(s.pzxid)],
    ["ctime", n.ctimeText], ["mtime", n.mtimeText],
    ["version", s.version], ["cversion", s.cversion], ["aversion", s.aversion],
    ["ephemeralOwner", s.ephemeralOwner], ["dataLength", s.dataLength], ["numChildren", s.numChildren],
  ];
  if (n.ttlMs) rows.push(["ttl", n.ttlMs + " ms"]);
  return el("div", {}, el("h3", {}, "Stat"),
    el("table", { class: "kv", id: "stat" }, ...rows.map(([k, v]) =>
      el("tr", { "data-key": k, "data-value": String(v) }, el("th", {}, k), el("td", { class: "mono" }, v)))));
}

function aclView(n) {
  const box = el("div", {}, el("h3", {}, "ACL"));
  if (n.aclError) { box.append(el("p", { class: "error" }, n.aclError)); return box; }
  box.append(el("table", { id: "acl", class: "kv" },
    el("tr", {}, el("th", {}, "scheme"), el("th", {}, "id"), el("th", {}, "perms")),
    ...n.acl.map((a) => el("tr", {}, el("td", { class: "mono" }, a.scheme), el("td", { class: "mono" }, a.id), el("td", { class: "mono" }, a.perms)))));
  return box;
}

function writeForms(n) {
  if (!state.info || !state.info.writes) return null;
  const out = el("p", { class: "muted", id: "write-result" });
  const send = async (method, url, body) => {
    try {
      const r = await api(url, { method, headers: { "Content-Type": "application/json" }, body: body && JSON.stringify(body) });
      out.className = "muted"; out.textContent = "done: " + JSON.stringify(r);
    } catch (e) { out.className = "error"; out.textContent = e.message; }
  };
  const setText = el("textarea", { id: "set-data" }, n.data && n.data.text || "");
  const childName = el("input", { id: "child-name", placeholder: "child name" });
  const childData = el("input", { id: "child-data", placeholder: "data" });
  const mode = el("select", { id: "child-mode" }, ...["persistent", "persistent_sequential", "container"].map((m) => el("option", { value: m }, m)));
  const base = n.path === "/" ? "" : n.path;
  return el("div", { class: "writes" }, el("h3", {}, "Write (as " + (state.info.identities.join(", ") || "an unauthenticated client") + ")"),
    el("fieldset", {}, el("legend", {}, "set data"), setText,
      el("button", { id: "set-button", onclick: () => send("PUT", "node?path=" + q(n.path), { data: setText.value, version: n.stat.version }) }, "set (version " + n.stat.version + ")")),
    el("fieldset", {}, el("legend", {}, "create child"), childName, " ", childData, " ", mode, " ",
      el("button", { id: "create-child", onclick: () => send("POST", "node", { path: base + "/" + childName.value, data: childData.value, mode: mode.value }) }, "create")),
    el("div", { class: "actions" }, el("button", { onclick: () => { if (confirm("delete " + n.path + "?")) send("DELETE", "node?path=" + q(n.path) + "&version=" + n.stat.version); } }, "delete node")),
    out);
}

// ---- sessions, locks, cluster ----

async function loadSessions() {
  const tbody = document.querySelector("#sessions tbody");
  let list, consoles;
  try { [list, consoles] = await Promise.all([api("sessions"), memberConsoles()]); } catch (e) { tbody.replaceChildren(el("tr", {}, el("td", { class: "error", colSpan: 9 }, e.message))); return; }
  const total = list.length;
  const filter = document.getElementById("session-filter").value.trim();
  if (filter) list = list.filter((s) => s.id.includes(filter) || (s.client || "").includes(filter) || s.ephemerals.some((p) => p.includes(filter)) || s.watches.some((w) => w.path.includes(filter)));
  document.getElementById("session-count").textContent = filter ? `${list.length} of ${total} sessions` : `${total} sessions`;
  tbody.replaceChildren(...list.map((s) => el("tr", { "data-session": s.id },
    el("td", { class: "mono" }, s.id),
    el("td", { class: "mono client" }, s.client || (s.member ? "?" : "not connected")),
    el("td", { class: "member" }, memberLink(s.member, consoles)),
    el("td", { class: "nowrap" }, s.connectedMsAgo < 0 ? "?" : ago(s.connectedMsAgo)),
    el("td", { class: "nowrap heard" }, s.heardMsAgo < 0 ? "?" : ago(s.heardMsAgo)),
    el("td", { class: "nowrap expires" }, s.expiresInMs < 0 ? "?" : seconds(s.expiresInMs)),
    el("td", { class: "nowrap" }, s.timeoutMs / 1000 + " s"),
    el("td", {}, el("ul", { class: "plain mono ephemerals" }, ...s.ephemerals.map((p) => el("li", {}, el("a", { href: "#tree:" + p }, p))))),
    el("td", {}, el("ul", { class: "plain mono watches" }, ...s.watches.map((w) => el("li", {}, `${w.kind} ${w.mode} ${w.path}`)))))));
  if (list.length === 0) tbody.append(el("tr", {}, el("td", { colSpan: 9, class: "muted" }, "no sessions")));
}

// memberConsoles maps each member's id to its console's URL, as the
// cluster view gives them.
async function memberConsoles() {
  const c = await api("cluster");
  state.self = c.self;
  return new Map(c.members.map((m) => [m.id, m.console]));
}

// memberLink names a member, linked to its console if it has one and is
// not this member.
function memberLink(id, consoles, hash) {
  if (!id) return el("span", { class: "muted" }, "?");
  const url = consoles && consoles.get(id);
  if (!url || id === state.self) return "" + id + (id === state.self ? " (this)" : "");
  return el("a", { href: url + (hash || "#sessions") }, "" + id);
}

function seconds(ms) { return (ms / 1000).toFixed(1) + " s"; }

async function loadLocks() {
  const box = document.getElementById("locks");
  let list, consoles;
  try { [list, consoles] = await Promise.all([api("locks"), memberConsoles()]); } catch (e) { box.replaceChildren(el("p", { class: "error" }, e.message)); return; }
  if (list.length === 0) { box.replaceChildren(el("p", { class: "muted" }, "no lock queue")); return; }
  const now = Date.now();
  box.replaceChildren(...list.map((lq) => {
    const leases = lq.recipe === "semaphore leases";
    const holding = lq.nodes.filter((n) => n.holds).length;
    const waiting = lq.nodes.length - holding;
    const position = new Map(lq.nodes.map((n, i) => [n.name, i + 1]));
    const role = (n) => leases ? (n.taking ? "waiting for a lease" : "holds a lease") : n.holds ? "holder" : "waiting";
    const summary = leases
      ? `${holding} leases held, ${waiting} taker waiting for one (more takers wait in ${lq.path.replace(/leases$/, "locks")}); the limit is the application's`
      : `${holding} holding, ${waiting} waiting`;
    return el("div", { class: "lock", "data-path": lq.path },
      el("div", {}, el("a", { class: "mono", href: "#tree:" + lq.path }, lq.path), " ",
        el("span", { class: "badge" }, lq.recipe || "?"), " ",
        el("span", { class: "muted" }, summary)),
      lq.error ? el("p", { class: "error" }, lq.error) : null,
      el("table", { class: "queue" },
        el("tr", {}, ...["#", "", "node", "data", "session", "client", "member", lq.recipe === "read-write" ? "kind" : null, "waits for", "queued"].filter((h) => h !== null).map((h) => el("th", {}, h))),
        ...lq.nodes.map((n, i) => el("tr", { class: "contender " + (n.holds ? "holder" : "waiter"), "data-name": n.name },
          el("td", { class: "muted" }, i + 1),
          el("td", {}, el("span", { class: "role" }, role(n))),
          el("td", { class: "mono" }, el("a", { href: "#tree:" + lq.path + "/" + n.name }, n.name)),
          el("td", { class: "mono data", title: n.data }, n.data),
          el("td", { class: "mono session" }, n.session),
          el("td", { class: "mono client" }, n.client || "?"),
          el("td", { class: "member" }, memberLink(n.member, consoles, "#locks")),
          lq.recipe === "read-write" ? el("td", {}, n.write ? "writer" : "reader") : null,
          el("td", { class: "mono", title: n.waits || "" }, n.waits ? "#" + position.get(n.waits) : ""),
          el("td", { class: "muted nowrap" }, ago(now - n.ctime))))));
  }));
}

// hex shows a zxid as ZooKeeper's tools do.
function hex(zxid) { return "0x" + Number(zxid).toString(16); }

function ago(ms) {
  if (ms < 1000) return "just now";
  if (ms < 60000) return Math.round(ms / 1000) + " s ago";
  if (ms < 3600000) return Math.round(ms / 60000) + " min ago";
  return Math.round(ms / 3600000) + " h ago";
}

// diskRows says what the member found wrong with its disk and, on the
// leader, with the members' trees.
function diskRows(d) {
  if (!d) return [];
  const rows = [
    ["disk damage found", d.corruptions + (d.tornWrites ? ` (and ${d.tornWrites} torn writes dropped)` : "")],
    ["repairing from the leader", d.repairing ? "yes" : "no"],
    ["digest mismatches", d.digestMismatches],
  ];
  const m = d.lastMismatch;
  if (m) rows.push(["last digest mismatch", `member ${m.member} at zxid ${hex(m.zxid)}, ${ago(m.msAgo)}`]);
  return rows;
}

async function loadCluster() {
  const tbody = document.querySelector("#members tbody");
  let c;
  try { c = await api("cluster"); } catch (e) { tbody.replaceChildren(el("tr", {}, el("td", { class: "error", colSpan: 8 }, e.message))); return; }
  state.self = c.self;
  const known = c.members.every((m) => m.applied >= 0);
  document.getElementById("cluster-note").textContent =
    `This page is served by member ${c.self}. ` +
    (known ? "Applied zxids and when each member was last heard from are the leader's; lag is how many zxids each is behind the leader."
      : "The leader could not be asked: the other members' applied zxids are unknown here.");
  const consoles = new Map(c.members.map((m) => [m.id, m.console]));
  tbody.replaceChildren(...c.members.map((m) => el("tr", { "data-id": m.id },
    el("td", {}, m.id + (m.self ? " (this)" : "")),
    el("td", { class: "role role-" + m.role }, m.role),
    el("td", m.applied < 0 ? { class: "mono applied" } : { class: "mono applied", "data-known": "" }, m.applied < 0 ? "?" : hex(m.applied)),
    el("td", { class: "mono lag" }, m.lag < 0 ? "?" : m.lag),
    el("td", {}, m.heardMsAgo < 0 ? (m.self || m.role === "leader" ? "-" : "?") : m.heardMsAgo + " ms ago"),
    el("td", { class: "mono" }, m.raftAddr || "-"),
    el("td", { class: "mono" }, m.client || "-"),
    el("td", { class: "console" }, m.self ? "(this page)" : m.console ? memberLink(m.id, consoles, "#cluster") : "-"))));
  const h = c.holds;
  document.getElementById("holds").replaceChildren(...[
    ["znodes", h.znodes], ["ephemeral znodes", h.ephemerals], ["data", h.dataBytes + " bytes"],
    ["sessions (all members')", h.sessions], ["watches (this member's clients)", h.watches],
    ...diskRows(c.disk),
  ].map(([k, v]) => el("tr", { "data-key": k }, el("th", {}, k), el("td", { class: "mono" }, v))));
  const self = c.members.find((m) => m.self);
  if (self) document.getElementById("member").textContent = `member ${c.self} · ${self.role}`;
}

// ---- tabs, live updates ----

function showTab(tab) {
  state.tab = tab;
  document.querySelectorAll(".tab").forEach((t) => t.classList.toggle("active", t.id === "tab-" + tab));
  document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("active", a.dataset.tab === tab));
  refreshTab();
}

function refreshTab() {
  if (state.tab === "sessions") loadSessions();
  else if (state.tab === "locks") loadLocks();
  else if (state.tab === "cluster") loadCluster();
}

function route() {
  const h = decodeURIComponent(location.hash.slice(1));
  if (h.startsWith("tree:")) {
    const path = h.slice(5) || "/";
    // Expand the ancestors so the node is shown.
    let p = parentOf(path);
    const chain = [];
    while (p !== "/") { chain.push(p); p = parentOf(p); }
    chain.forEach((a) => state.expanded.add(a));
    state.expanded.add(path);
    showTab("tree");
    loadChildren("/").then(() => select(path));
    return;
  }
  showTab(["tree", "sessions", "locks", "cluster"].includes(h) ? h : "tree");
}

let tabTimer = null;
function onChange(ev) {
  state.zxid = ev.zxid || state.zxid;
  document.getElementById("zxid").textContent = "zxid " + hex(state.zxid);
  const shown = ev.resync ? [...state.expanded] : [];
  for (const p of ev.paths) {
    if (state.expanded.has(p)) shown.push(p);                 // its children changed
    if (state.expanded.has(parentOf(p))) shown.push(parentOf(p)); // it appeared, went, or its counts changed
  }
  for (const p of new Set(shown)) if (findItem(p)) loadChildren(p);
  if (state.selected && (ev.resync || ev.paths.includes(state.selected))) loadDetail();
  const log = document.getElementById("changes");
  if (ev.paths.length) {
    log.textContent = ev.paths.slice(0, 8).join("  ") + (ev.paths.length > 8 ? ` … +${ev.paths.length - 8}` : "") + " · " + log.textContent.slice(0, 300);
  }
  if (state.tab !== "tree" && !tabTimer) tabTimer = setTimeout(() => { tabTimer = null; refreshTab(); }, 250);
}

function connect() {
  const live = document.getElementById("live");
  const es = new EventSource("api/events");
  es.addEventListener("hello", (e) => {
    live.className = "live on"; live.textContent = "live";
    onChange(JSON.parse(e.data));
    // A reconnect may have missed changes: reload what is shown.
    onChange({ zxid: JSON.parse(e.data).zxid, paths: [], resync: true });
    refreshTab();
  });
  es.addEventListener("change", (e) => onChange(JSON.parse(e.data)));
  es.onerror = () => { live.className = "live off"; live.textContent = "reconnecting"; };
}

// The cluster view changes without changes to the tree (reports, lag):
// refresh it while shown.
setInterval(() => { if (state.tab === "cluster" && !document.hidden) loadCluster(); }, 2000);

async function start() {
  try {
    state.info = await api("info");
    document.getElementById("member").textContent = `member ${state.info.member} · ${state.info.role}`;
    const mode = document.getElementById("mode");
    mode.textContent = state.info.writes ? "writes enabled" : "read-only";
  } catch (e) {
    document.getElementById("mode").textContent = e.message;
  }
  document.getElementById("tree").replaceChildren(treeItem("/", "/", { numChildren: 1, kind: "persistent" }));
  window.addEventListener("hashchange", route);
  document.getElementById("session-filter").addEventListener("input", loadSessions);
  route();
  connect();
}

start();
