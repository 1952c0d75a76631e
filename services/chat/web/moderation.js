// Moderation on the chat page: what a moderator of the channel shown sees
// (delete, timeout and ban on each message, the shield switch, the
// channel's modes, the review queue), and the shield badge everyone sees.
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
  // How long a ban button waits for its second click.
  const ARM_MS = 4000;

  let role = null; // the caller's role in the channel; null: not signed in
  let gen = 0; // bumps on each change of channel: answers about the last one are dropped
  let heldSeq = 0; // the latest queue refresh; only it schedules the next (teardown bumps it)
  let heldTimer = null;
  let shieldTimer = null;

  const byId = (id) => document.getElementById(id);
  const isMod = () => role !== null && rank(role) >= rank("moderator");
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
      );
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
    if (what === "ban" && btn.dataset.armed !== "1") {
      btn.dataset.armed = "1";
      btn.textContent = "ban " + m.user.name + "?";
      setTimeout(() => {
        btn.dataset.armed = "";
        btn.textContent = "ban";
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
      }
      showError("");
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
      el("section", { id: "mod-held" }, el("h3", {}, "review queue ", el("span", { id: "held-count" })), el("ul", { id: "held" })),
      el("section", { id: "mod-modes" }, el("h3", { textContent: "modes" }), form),
      // The mod log (GET /channels/{channel}/modlog) fills this section.
      el("section", { id: "modlog", hidden: true }),
    );
    panel.hidden = false;
  }

  function teardown() {
    clearTimeout(heldTimer);
    heldSeq++;
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
  });
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && isMod()) refreshHeld();
  });

  return {
    // setRole: the caller's role in the channel is known (null: signed out).
    setRole(r) {
      const was = isMod();
      role = r;
      if (isMod()) {
        if (!was || !byId("modes-form")) buildPanel();
        loadChannel();
        refreshHeld();
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
      }
    },
  };
})();
