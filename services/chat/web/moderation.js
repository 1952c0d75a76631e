// Moderation on the chat page: what a moderator of the channel shown sees
// (delete, timeout, ban and purge on each message, the shield switch, the
// channel's modes, the review queue, the moderation log; for the channel's
// broadcaster also its moderators, named from a message and removed from a
// list), and the shield badge everyone sees.
// A viewer's page builds none of the controls, and the API refuses them
// anyway. Loaded before app.js: it uses app.js's state, api and showError
// only from functions called once both are loaded.
"use strict";

const moderation = (() => {
  const ranks = ["viewer", "subscriber", "vip", "moderator", "broadcaster"];
  const rank = (r) => ranks.indexOf(r);

  // The review queue is polled: a held message is announced to its sender
  // only (the channel's event log is read by everyone, so it cannot carry
  // a text nobody else may see). Moderators are few; one GET each per
  // HELD_POLL_MS while the tab is visible, and at once after each review.
  const HELD_POLL_MS = 5000;
  const TIMEOUTS = [
    [60, "1 minute"],
    [600, "10 minutes"],
    [3600, "1 hour"],
    [86400, "1 day"],
    [604800, "7 days"],
  ];
  // How long a ban or purge button waits for its second click.
  const ARM_MS = 4000;
  // The moderation log is read a page at a time; it is refreshed on the
  // channel's moderation events, at most once per LOG_GAP_MS (a purge is
  // one message_deleted event per message, a raid many filter hits), and
  // LOG_SETTLE_MS after the first event: a purge's entry is written right
  // after its deletions, whose events may arrive first. LOG_MAX bounds
  // the entries kept in the page (the oldest go; "older" reads them again).
  const LOG_PAGE = 50;
  const LOG_GAP_MS = 3000;
  const LOG_SETTLE_MS = 500;
  const LOG_MAX = 500;

  let role = null; // the caller's role in the channel; null: not signed in
  let gen = 0; // bumps on each change of channel: answers about the last one are dropped
  let heldSeq = 0; // the latest queue refresh; only it schedules the next (teardown bumps it)
  let heldTimer = null;
  let shieldTimer = null;
  let logTimer = null; // a log refresh waiting for its turn
  let logLast = 0; // when the log was last read
  let logSeq = 0; // the latest log refresh; older answers are dropped
  let logNext = null; // the cursor of the older page; null: none

  const byId = (id) => document.getElementById(id);
  const isMod = () => role !== null && rank(role) >= rank("moderator");
  // The channel's broadcaster names and removes its moderators (the roles API).
  const isBroadcaster = () => role === "broadcaster";
  const channelPath = () => "channels/" + encodeURIComponent(state.channel);

  // el builds an element; props are set as properties (textContent, never
  // innerHTML), children appended.
  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === "data") Object.assign(e.dataset, v);
      else e[k] = v;
    }
    e.append(...children);
    return e;
  }

  function fail(what, e) {
    showError(what + ": " + e.message);
  }

  // decorate gives a message's line its actions, for a moderator only:
  // delete on messages of users below (and on one's own and the bot's),
  // timeout and ban on users below. The role shown with a message is the
  // one it was sent with; the server checks the current one.
  function decorate(li, m) {
    li.querySelector(".mod-actions")?.remove();
    if (!isMod() || !m || m.deleted) return;
    const mine = state.me && m.user.id === state.me.id;
    const below = !m.bot && !mine && rank(m.user.role) < rank(role);
    const box = el("span", { className: "mod-actions" });
    if (below || mine || m.bot) box.append(el("button", { type: "button", textContent: "delete", data: { act: "delete" } }));
    if (below) {
      box.append(
        el("button", { type: "button", textContent: "timeout", title: "for the length chosen in the panel", data: { act: "timeout" } }),
        el("button", { type: "button", textContent: "ban", title: "click twice: bans from this channel", data: { act: "ban" } }),
        el("button", { type: "button", textContent: "purge", title: "click twice: deletes this user's recent messages in this channel", data: { act: "purge" } }),
      );
      if (isBroadcaster() && rank(m.user.role) < rank("moderator")) {
        box.append(el("button", { type: "button", textContent: "make mod", title: "name this user a moderator of this channel", data: { act: "mod" } }));
      }
    }
    if (box.childElementCount) li.append(box);
  }

  function decorateAll() {
    for (const li of byId("messages").querySelectorAll("li[data-id]")) {
      decorate(li, state.msgs.get(Number(li.dataset.id)));
    }
  }

  function reason() {
    const r = byId("mod-reason");
    return r && r.value.trim() ? { reason: r.value.trim() } : {};
  }

  async function act(btn) {
    const li = btn.closest("li[data-id]");
    const m = li && state.msgs.get(Number(li.dataset.id));
    if (!m || !isMod()) return;
    const ch = state.channel;
    const user = "users/" + encodeURIComponent(m.user.id);
    const what = btn.dataset.act;
    // Ban and purge cannot be undone from the page: a second click
    // within ARM_MS confirms.
    if ((what === "ban" || what === "purge") && btn.dataset.armed !== "1") {
      btn.dataset.armed = "1";
      btn.textContent = what + " " + m.user.name + "?";
      setTimeout(() => {
        btn.dataset.armed = "";
        btn.textContent = what;
      }, ARM_MS);
      return;
    }
    btn.disabled = true;
    try {
      if (what === "delete") {
        await api("DELETE", "messages/" + m.id + "?channel=" + encodeURIComponent(ch));
      } else if (what === "timeout") {
        await api("POST", user + "/timeout", { seconds: Number(byId("timeout-seconds").value), channel: ch, ...reason() });
      } else if (what === "ban") {
        await api("POST", user + "/ban", { channel: ch, ...reason() });
      } else if (what === "purge") {
        await api("POST", "channels/" + encodeURIComponent(ch) + "/" + user + "/purge", reason());
      } else if (what === "mod") {
        await api("PUT", "channels/" + encodeURIComponent(ch) + "/roles/" + encodeURIComponent(m.user.id), { role: "moderator" });
        refreshMods();
      }
      showError("");
      if (ch === state.channel) refreshLog(); // the page's own action: its entry is written
    } catch (e) {
      fail(what, e);
    } finally {
      btn.disabled = false;
    }
  }

  // The badge everyone sees while shield mode is on; an automatic shield
  // ends at `until` without an event, so the badge goes off by itself.
  function showShield(on, until) {
    clearTimeout(shieldTimer);
    const ends = until ? Date.parse(until) : 0;
    const active = on && (!ends || ends > Date.now());
    const badge = byId("shield-badge");
    badge.hidden = !active;
    badge.title = active && ends ? "shield mode until " + new Date(ends).toLocaleTimeString() : "shield mode";
    const sw = byId("shield-switch");
    if (sw) sw.checked = active;
    if (active && ends) {
      shieldTimer = setTimeout(() => (isMod() ? loadChannel() : showShield(false)), Math.min(ends - Date.now() + 100, 2 ** 31 - 1));
    }
  }

  // loadChannel reads the channel's settings: the badge for everyone, the
  // modes form for moderators.
  async function loadChannel() {
    const g = gen;
    try {
      const c = await api("GET", channelPath());
      if (g !== gen) return;
      showShield(c.shield_active, c.shield_until);
      fillModes(c);
    } catch (e) {
      // Reading may need a token (CHAT_PUBLIC_READ=false): no badge then.
    }
  }

  // Modes a moderator edits, with the API's bounds.
  const modes = [
    { key: "slow_mode_seconds", id: "mode-slow", label: "slow mode (seconds, 0 off)", type: "number", max: 120 },
    { key: "first_message_review", id: "mode-first", label: "first-message review", type: "checkbox" },
    { key: "min_account_age_seconds", id: "mode-age", label: "minimum account age (seconds, 0 off)", type: "number", max: 7776000 },
    { key: "unique_chat", id: "mode-unique", label: "unique chat (no repeats within 30 s)", type: "checkbox" },
    { key: "auto_shield", id: "mode-auto", label: "automatic shield on a raid", type: "checkbox" },
  ];

  function fillModes(c) {
    if (!byId("modes-form")) return;
    for (const f of modes) {
      const input = byId(f.id);
      if (f.type === "checkbox") input.checked = !!c[f.key];
      else input.value = String(c[f.key] || 0);
    }
  }

  async function saveModes(e) {
    e.preventDefault();
    const body = {};
    for (const f of modes) {
      const input = byId(f.id);
      if (f.type === "checkbox") body[f.key] = input.checked;
      else body[f.key] = Math.max(0, Math.min(f.max, Math.trunc(Number(input.value)) || 0));
    }
    const status = byId("modes-status");
    status.textContent = "saving";
    const g = gen;
    try {
      const c = await api("PATCH", channelPath(), body);
      if (g !== gen) return;
      fillModes(c);
      showShield(c.shield_active, c.shield_until);
      status.textContent = "saved";
    } catch (err) {
      if (g !== gen) return;
      status.textContent = "";
      fail("modes", err);
    }
  }

  async function switchShield(e) {
    const sw = e.target;
    const on = sw.checked;
    sw.disabled = true;
    try {
      const c = await api("PATCH", channelPath(), { shield: on });
      showShield(c.shield_active, c.shield_until);
    } catch (err) {
      sw.checked = !on;
      fail("shield", err);
    } finally {
      sw.disabled = false;
    }
  }

  // refreshHeld reads the review queue now and again every HELD_POLL_MS
  // (skipped while the tab is hidden); the latest call alone goes on.
  async function refreshHeld() {
    clearTimeout(heldTimer);
    const seq = ++heldSeq;
    const g = gen;
    if (!isMod()) return;
    if (!document.hidden) {
      try {
        const body = await api("GET", channelPath() + "/held");
        if (seq === heldSeq && g === gen) showHeld(body.held || []);
      } catch (e) {
        if (seq === heldSeq && g === gen) byId("held-count").textContent = "(could not load: " + e.message + ")";
      }
    }
    if (seq === heldSeq && g === gen) heldTimer = setTimeout(refreshHeld, HELD_POLL_MS);
  }

  function showHeld(list) {
    const ul = byId("held");
    if (!ul) return;
    byId("held-count").textContent = "(" + list.length + ")";
    ul.replaceChildren(
      ...list.map((h) =>
        el(
          "li",
          { data: { heldId: String(h.id) } },
          el("span", { className: "user", textContent: h.user.name }),
          el("span", { className: "why", textContent: h.reason === "filter" ? "filter" : "first message" }),
          el("span", { className: "text", textContent: h.text }),
          el("button", { type: "button", textContent: "approve", data: { held: "approve" } }),
          el("button", { type: "button", textContent: "deny", data: { held: "deny" } }),
        ),
      ),
    );
  }

  async function review(btn) {
    const li = btn.closest("li[data-held-id]");
    if (!li || !isMod()) return;
    const path = channelPath() + "/held/" + encodeURIComponent(li.dataset.heldId);
    btn.disabled = true;
    try {
      if (btn.dataset.held === "approve") await api("POST", path + "/approve");
      else await api("DELETE", path);
      li.remove();
      showError("");
    } catch (e) {
      fail(btn.dataset.held, e); // 404: reviewed by another moderator, or expired
    }
    refreshHeld();
  }

  // logOrder compares two log ids ("<ms>-<n>"): negative when a is older.
  function logOrder(a, b) {
    const [am, an] = a.split("-").map(Number);
    const [bm, bn] = b.split("-").map(Number);
    return am - bm || an - bn;
  }

  // logLine is one entry: when, who (a moderator, or automod and the
  // rule), what, to whom, why, and the action's details.
  function logLine(e) {
    const at = new Date(e.at);
    const today = at.toDateString() === new Date().toDateString();
    const auto = e.actor.id === "automod";
    const details = [];
    if (e.filter_action) details.push(e.filter_action + (e.penalty ? " → " + e.penalty : ""));
    if (e.role) details.push(e.role);
    if (e.action === "purge") details.push((e.count || 0) + (e.count === 1 ? " message" : " messages"));
    if (e.until) details.push("until " + new Date(e.until).toLocaleString());
    if (e.message_id) details.push("message " + e.message_id);
    return el(
      "li",
      { data: { id: e.id, action: e.action }, title: at.toLocaleString() },
      el("span", { className: "time", textContent: today ? at.toLocaleTimeString() : at.toLocaleString() }),
      el("span", { className: "actor" + (auto ? " automod" : ""), textContent: auto ? "automod · " + (e.rule || "") : e.actor.name }),
      el("span", { className: "action", textContent: e.action }),
      el("span", { className: "target", textContent: e.target ? e.target.name : "" }),
      el("span", { className: "detail", textContent: details.join(", ") }),
      el("span", { className: "reason", textContent: e.reason || "" }),
    );
  }

  // showLogMore shows "older" while there is an older page, and trims the
  // list to LOG_MAX (the cursor then starts below the last entry kept).
  function showLogMore() {
    const ul = byId("modlog-list");
    while (ul.childElementCount > LOG_MAX) {
      ul.lastElementChild.remove();
      logNext = ul.lastElementChild.dataset.id;
    }
    byId("modlog-older").hidden = !logNext;
    byId("modlog-empty").hidden = ul.childElementCount > 0;
  }

  // refreshLog reads the newest page: entries newer than the ones shown
  // go on top; when all of them are new there may be a gap below, so the
  // page replaces the list.
  async function refreshLog() {
    clearTimeout(logTimer);
    logTimer = null;
    if (!isMod() || document.hidden) return; // visibilitychange brings it up to date
    const seq = ++logSeq;
    const g = gen;
    logLast = Date.now();
    try {
      const p = await api("GET", channelPath() + "/modlog?limit=" + LOG_PAGE);
      const ul = byId("modlog-list");
      if (seq !== logSeq || g !== gen || !ul) return;
      const entries = p.entries || [];
      const top = ul.firstElementChild && ul.firstElementChild.dataset.id;
      const newer = top ? entries.filter((e) => logOrder(e.id, top) > 0) : entries;
      if (!top || newer.length === entries.length) {
        ul.replaceChildren(...entries.map(logLine));
        logNext = p.next || null;
      } else {
        ul.prepend(...newer.map(logLine));
      }
      byId("modlog-status").textContent = "";
      showLogMore();
    } catch (e) {
      if (seq === logSeq && g === gen && byId("modlog-status")) byId("modlog-status").textContent = "could not load: " + e.message;
    }
  }

  // requestLog refreshes the log after a moderation event: LOG_SETTLE_MS
  // from now, or LOG_GAP_MS after the last read if that is later; events
  // meanwhile ride on the refresh already waiting.
  function requestLog() {
    if (!isMod() || logTimer !== null) return;
    logTimer = setTimeout(refreshLog, Math.max(LOG_SETTLE_MS, logLast + LOG_GAP_MS - Date.now()));
  }

  // olderLog appends the page below the last entry shown; an answer that
  // a refresh has made stale (it replaced the list) is dropped.
  async function olderLog(btn) {
    const cursor = logNext;
    const g = gen;
    if (!cursor || !isMod()) return;
    btn.disabled = true;
    try {
      const p = await api("GET", channelPath() + "/modlog?limit=" + LOG_PAGE + "&before=" + encodeURIComponent(cursor));
      const ul = byId("modlog-list");
      if (g !== gen || logNext !== cursor || !ul) return;
      ul.append(...(p.entries || []).map(logLine));
      logNext = p.next || null;
      showLogMore();
    } catch (e) {
      if (g === gen) fail("moderation log", e);
    } finally {
      btn.disabled = false;
    }
  }

  // refreshMods lists the channel's moderators, each with a remove button,
  // for the broadcaster (GET /channels/{channel}/roles).
  async function refreshMods() {
    if (!isBroadcaster() || !byId("mods")) return;
    const g = gen;
    try {
      const body = await api("GET", channelPath() + "/roles");
      if (g !== gen || !byId("mods")) return;
      const mods = (body.roles || []).filter((r) => r.role === "moderator");
      byId("mods").replaceChildren(
        ...mods.map((r) =>
          el(
            "li",
            { data: { user: r.user_id } },
            el("span", { className: "name", textContent: r.name }),
            " ",
            el("button", { type: "button", textContent: "remove", title: "back to viewer in this channel", data: { unmod: r.user_id } }),
          ),
        ),
      );
      byId("mods-empty").hidden = mods.length > 0;
    } catch (e) {
      fail("moderators", e);
    }
  }

  async function unmod(btn) {
    if (!isBroadcaster()) return;
    btn.disabled = true;
    try {
      await api("DELETE", channelPath() + "/roles/" + encodeURIComponent(btn.dataset.unmod));
      showError("");
      refreshMods();
      refreshLog();
    } catch (e) {
      fail("remove moderator", e);
      btn.disabled = false;
    }
  }

  // buildPanel fills #moderation for a moderator.
  function buildPanel() {
    const panel = byId("moderation");
    const sw = el("input", { type: "checkbox", id: "shield-switch" });
    sw.addEventListener("change", switchShield);
    const form = el(
      "form",
      { id: "modes-form" },
      ...modes.map((f) => {
        const input = el("input", { id: f.id, type: f.type });
        if (f.type === "number") Object.assign(input, { min: "0", max: String(f.max), step: "1" });
        return el("label", {}, input, " " + f.label);
      }),
      el("button", { type: "submit", id: "modes-save", textContent: "save" }),
      el("span", { id: "modes-status", className: "status-note" }),
    );
    form.addEventListener("submit", saveModes);
    const timeout = el("select", { id: "timeout-seconds" }, ...TIMEOUTS.map(([s, label]) => el("option", { value: String(s), textContent: label })));
    timeout.value = "600";
    panel.replaceChildren(
      el("h2", { textContent: "moderation #" + state.channel }),
      el("section", { id: "mod-shield" }, el("label", {}, sw, " shield mode")),
      el(
        "section",
        { id: "mod-actions-settings" },
        el("h3", { textContent: "actions on messages" }),
        el("label", {}, "timeout for ", timeout),
        el("label", {}, "reason ", el("input", { id: "mod-reason", maxLength: 500, placeholder: "optional, shown to everyone", autocomplete: "off" })),
      ),
      ...(isBroadcaster()
        ? [
            el(
              "section",
              { id: "mod-mods" },
              el("h3", { textContent: "moderators" }),
              el("p", { id: "mods-empty", className: "status-note", textContent: "none yet: name one with a message's \u201cmake mod\u201d" }),
              el("ul", { id: "mods" }),
            ),
          ]
        : []),
      el("section", { id: "mod-held" }, el("h3", {}, "review queue ", el("span", { id: "held-count" })), el("ul", { id: "held" })),
      el("section", { id: "mod-modes" }, el("h3", { textContent: "modes" }), form),
      el(
        "section",
        { id: "modlog" },
        el("h3", {}, "moderation log ", el("span", { id: "modlog-status", className: "status-note" })),
        el("p", { id: "modlog-empty", className: "status-note", textContent: "nothing yet", hidden: true }),
        el("ul", { id: "modlog-list" }),
        el("button", { type: "button", id: "modlog-older", textContent: "older", hidden: true }),
      ),
    );
    byId("modlog-older").addEventListener("click", (e) => olderLog(e.target));
    panel.hidden = false;
  }

  function teardown() {
    clearTimeout(heldTimer);
    heldSeq++;
    clearTimeout(logTimer);
    logTimer = null;
    logSeq++;
    logLast = 0;
    logNext = null;
    const panel = byId("moderation");
    panel.replaceChildren();
    panel.hidden = true;
  }

  // One listener each for every message's and every held message's
  // buttons (no inline handlers: the page's CSP forbids them).
  byId("messages").addEventListener("click", (e) => {
    const btn = e.target.closest("button[data-act]");
    if (btn) act(btn);
  });
  byId("moderation").addEventListener("click", (e) => {
    const btn = e.target.closest("button[data-held]");
    if (btn) review(btn);
    const un = e.target.closest("button[data-unmod]");
    if (un) unmod(un);
  });
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && isMod()) {
      refreshHeld();
      requestLog();
    }
  });

  return {
    // setRole: the caller's role in the channel is known (null: signed out).
    setRole(r) {
      const was = isMod();
      role = r;
      if (isMod()) {
        // The moderators' section is the broadcaster's only: rebuilt when the role changes.
        if (!was || !byId("modes-form") || isBroadcaster() !== Boolean(byId("mod-mods"))) buildPanel();
        refreshMods();
        loadChannel();
        refreshHeld();
        refreshLog();
      } else {
        teardown();
      }
      decorateAll();
    },
    // channelChanged: another channel is shown; the role there is not known yet.
    channelChanged() {
      role = null;
      gen++;
      teardown();
      showShield(false);
      loadChannel();
    },
    decorate,
    // shieldChanged: a shield_mode event.
    shieldChanged(s) {
      showShield(s.on, s.until);
      if (isMod()) {
        loadChannel();
        refreshHeld(); // shield mode holds first messages
        requestLog();
      }
    },
    // logChanged: a moderation event (a deletion, a timeout, a ban); the
    // log is read again soon.
    logChanged: requestLog,
  };
})();
