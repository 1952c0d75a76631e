// The chat's browser client. Every URL is built relative to the page, so it
// works at / and behind a proxy prefix such as /chat/. Protocol: /docs, or
// the service README ("Live delivery").
"use strict";

const $ = (id) => document.getElementById(id);
const base = new URL(".", document.baseURI);

const state = {
  channel: "general",
  ws: null,
  cursor: null, // last event cursor seen: reconnect with since=cursor
  backoff: 500,
  timer: null,
  reqId: 0,
  stopped: false,
  byId: new Map(), // message id -> <li> (null once deleted)
  msgs: new Map(), // message id -> the message shown (moderation.js acts on it)
  me: null, // {id, name, role}: the signed-in user, role held in this channel
  pending: [], // the sender's own held messages: {li, text}
  offerToken: true, // offer the token in the handshake (see protocols)
  signedIn: false, // the socket holds the token (a hello or ack named the user)
};

function setStatus(text, cls) {
  const s = $("status");
  s.textContent = text;
  s.className = "status " + (cls || "");
}

function showError(text) {
  $("error").textContent = localTimes(text || "");
}

// localTimes writes the UTC timestamps the server puts in its messages
// ("timed out until 2026-12-07T14:22:00Z") in the reader's own time zone and
// format.
function localTimes(text) {
  return text.replace(/\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})/g,
    (ts) => { const d = new Date(ts); return isNaN(d) ? ts : d.toLocaleString(); });
}

function token() {
  return sessionStorage.getItem("chat.token") || "";
}

// api calls the REST API with the page's token and returns the answer's
// JSON (null when empty); a refusal throws an Error with the server's
// message (apierr's, never internal detail).
async function api(method, path, body) {
  const headers = {};
  if (token()) headers.Authorization = "Bearer " + token();
  const init = { method, headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(new URL("api/v1/" + path, base), init);
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch (e) {
    data = null;
  }
  if (!res.ok) throw new Error((data && data.message) || String(res.status));
  return data;
}

// isJWT tells a platform token (a JWT: three base64url parts) from a chat
// token.
function isJWT(t) {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(t || "");
}

// embedOrigins are the sites allowed to hand the page a token by
// postMessage besides its own origin (CHAT_EMBED_ORIGINS, put in the page
// by the server).
const embedOrigins = (document.querySelector('meta[name="chat-embed-origins"]')?.content || "").split(/\s+/).filter(Boolean);

function trustedOrigin(origin) {
  return origin === location.origin || embedOrigins.includes(origin);
}

// tellEmbedder lets the framing site know what happened (signed in, token
// expired), posted only to an allowed origin.
function tellEmbedder(msg) {
  if (window.parent === window) return;
  for (const o of embedOrigins) window.parent.postMessage(msg, o);
}

// showMe asks the server who the token is (GET /users/me) and shows the
// name and role; the role in the channel decides what moderation.js
// builds. An answer for another channel or token than the current ones
// (the user switched meanwhile) is dropped.
async function showMe() {
  const t = token();
  const channel = state.channel;
  if (!t) {
    state.me = null;
    $("who").textContent = "";
    moderation.setRole(null);
    return;
  }
  try {
    const body = await api("GET", "users/me?channel=" + encodeURIComponent(channel));
    if (token() !== t || state.channel !== channel) return;
    // The role in this channel: the higher of the platform-wide one and
    // the one given here.
    const role = body.channel ? body.channel.role : body.role;
    state.me = { id: body.id, name: body.name, role };
    $("who").textContent = "as " + body.name + " (" + role + " in #" + channel + ")";
    moderation.setRole(role);
    tellEmbedder({ type: "chat-signed-in", user: { id: body.id, name: body.name, role, channel } });
  } catch (e) {
    if (token() !== t || state.channel !== channel) return;
    state.me = null;
    $("who").textContent = "";
    moderation.setRole(null);
    showError("sign-in failed: " + e.message);
  }
}

// useToken signs the page in with t: a development or chat token typed
// in, or a platform token handed over by the embedding site. A fresh
// platform token for a socket signed in with one renews it (refresh).
function useToken(t) {
  const prev = token();
  if (t) sessionStorage.setItem("chat.token", t);
  else sessionStorage.removeItem("chat.token");
  state.offerToken = true;
  if (state.ws && state.ws.readyState === WebSocket.OPEN && t) {
    const type = isJWT(prev) && isJWT(t) && state.signedIn ? "refresh" : "auth";
    state.ws.send(JSON.stringify({ type, token: t, id: ++state.reqId }));
  }
  showMe();
}

function wsURL() {
  const u = new URL("api/v1/ws", base);
  u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
  u.searchParams.set("channel", state.channel);
  if (state.cursor !== null) u.searchParams.set("since", state.cursor);
  return u.toString();
}

function messageId(cursor) {
  return parseInt(String(cursor).split("-")[0], 10) || 0;
}

// render inserts a message in id order; tombstones and duplicates are not shown.
function render(m) {
  if (m.deleted) {
    remove(m.id);
    return;
  }
  if (state.byId.has(m.id)) return;
  const li = document.createElement("li");
  li.dataset.id = m.id;
  if (m.bot) li.classList.add("bot");
  const time = document.createElement("span");
  time.className = "time";
  time.textContent = new Date(m.created_at).toLocaleTimeString();
  const user = document.createElement("span");
  user.className = "user";
  user.textContent = m.user.name;
  const role = document.createElement("span");
  role.className = "role";
  role.textContent = m.user.role;
  const text = document.createElement("span");
  text.className = "text";
  text.textContent = m.text;
  li.append(time, user, role, text);
  state.msgs.set(m.id, m);
  moderation.decorate(li, m);
  if (state.me && m.user.id === state.me.id) settlePending(m.text);
  const list = $("messages");
  let before = null;
  for (let el = list.lastElementChild; el; el = el.previousElementSibling) {
    if (el.dataset.id && Number(el.dataset.id) < m.id) break;
    if (el.dataset.id) before = el;
  }
  list.insertBefore(li, before);
  state.byId.set(m.id, li);
  scrollDown();
}

function remove(id) {
  const li = state.byId.get(id);
  if (li) li.remove();
  state.byId.set(id, null); // remember: a late history page must not bring it back
  state.msgs.delete(id);
}

// pending shows the sender's own message held for review (the ack's
// held): only they see it, until it is approved (the message arrives,
// settlePending) or expires unreviewed (a denial is not announced).
function pending(h) {
  const li = document.createElement("li");
  li.className = "pending";
  const user = document.createElement("span");
  user.className = "user";
  user.textContent = h.user.name;
  const text = document.createElement("span");
  text.className = "text";
  text.textContent = h.text;
  const note = document.createElement("span");
  note.className = "note";
  note.textContent = "waiting for review";
  li.append(user, text, note);
  $("messages").append(li);
  const p = { li, text: h.text };
  state.pending.push(p);
  const left = Date.parse(h.expires_at) - Date.now();
  if (left > 0) setTimeout(() => dropPending(p), Math.min(left, 2 ** 31 - 1));
  scrollDown();
}

function settlePending(text) {
  const p = state.pending.find((p) => p.text === text);
  if (p) dropPending(p);
}

function dropPending(p) {
  p.li.remove();
  state.pending = state.pending.filter((q) => q !== p);
}

function notice(text) {
  const li = document.createElement("li");
  li.className = "notice";
  li.textContent = text;
  $("messages").append(li);
  scrollDown();
}

function scrollDown() {
  const main = document.querySelector("main");
  main.scrollTop = main.scrollHeight;
}

function clearMessages() {
  $("messages").replaceChildren();
  state.byId.clear();
  state.msgs.clear();
  state.pending = [];
}

// loadHistory fetches the messages up to the subscription's start; live
// events after it arrive on the socket, so nothing is shown twice.
async function loadHistory(lastId) {
  const id = messageId(lastId);
  if (id === 0) return;
  const u = new URL("api/v1/messages", base);
  u.searchParams.set("channel", state.channel);
  u.searchParams.set("limit", "100");
  u.searchParams.set("before", String(id + 1));
  const headers = {};
  if (token()) headers.Authorization = "Bearer " + token();
  try {
    const res = await fetch(u, { headers });
    if (!res.ok) throw new Error("history: " + res.status);
    const body = await res.json();
    const list = Array.isArray(body) ? body : body.messages || [];
    for (const m of list) {
      if (!state.byId.has(m.id)) render(m);
    }
  } catch (e) {
    showError("could not load history: " + e.message);
  }
}

function handle(ev) {
  if (ev.cursor !== undefined) state.cursor = ev.cursor;
  switch (ev.type) {
    case "hello":
      state.backoff = 500;
      state.signedIn = !!ev.user;
      setStatus("live", "live");
      if (!ev.recovered) {
        clearMessages();
        state.cursor = ev.last_id;
        loadHistory(ev.last_id);
      }
      break;
    case "message":
      render(ev.message);
      break;
    case "message_deleted":
      remove(ev.message.id);
      moderation.logChanged();
      break;
    case "user_timed_out":
      notice(ev.moderation.user.name + " was timed out by " + ev.moderation.by.name + (ev.moderation.reason ? ": " + ev.moderation.reason : ""));
      if (state.me && ev.moderation.user.id === state.me.id && ev.moderation.until) {
        showError("you are timed out until " + new Date(ev.moderation.until).toLocaleString());
      }
      moderation.logChanged();
      break;
    case "user_banned":
      notice(ev.moderation.user.name + " was banned by " + ev.moderation.by.name + (ev.moderation.reason ? ": " + ev.moderation.reason : ""));
      if (state.me && ev.moderation.user.id === state.me.id) showError("you are banned from #" + state.channel);
      moderation.logChanged();
      break;
    case "shield_mode":
      notice("shield mode " + (ev.shield.on ? "on" : "off") + " (" + ev.shield.by.name + (ev.shield.reason ? ": " + ev.shield.reason : "") + ")");
      moderation.shieldChanged(ev.shield);
      break;
    case "presence":
      $("presence").textContent = ev.count + " online";
      break;
    case "ack":
      if (ev.user) {
        state.signedIn = true;
        // The ack names the platform-wide role; the one shown is the
        // role in this channel (showMe).
        if (!state.me || state.me.id !== ev.user.id) showMe();
      }
      if (ev.held) {
        pending(ev.held);
        $("message").value = "";
        showError("");
      }
      if (ev.message) {
        render(ev.message);
        if (ev.reply) render(ev.reply);
        $("message").value = "";
        showError("");
      }
      break;
    case "error":
      showError(ev.message + (ev.retry_after_seconds ? " (retry in " + ev.retry_after_seconds + " s)" : ""));
      break;
  }
}

// protocols offers the token in the handshake (a browser cannot set an
// Authorization header on a WebSocket), so the server counts the socket as
// its user's from the start: it gets in even when anonymous readers hold
// all the places they may. After a handshake that offered it and failed
// (an unknown token answers 401, which a page cannot read), the next one
// goes without, and the auth frame's error says what was wrong.
function protocols() {
  const t = token();
  if (!t || !state.offerToken || !/^[A-Za-z0-9._~+-]+$/.test(t)) return undefined;
  return ["chat", "bearer." + t];
}

function connect() {
  clearTimeout(state.timer);
  const offered = protocols();
  const ws = new WebSocket(wsURL(), offered);
  let opened = false;
  state.ws = ws;
  setStatus("connecting");
  ws.onopen = () => {
    opened = true;
    // Also when the handshake carried it: the ack names the user.
    if (token()) ws.send(JSON.stringify({ type: "auth", token: token(), id: ++state.reqId }));
  };
  ws.onmessage = (e) => {
    if (ws !== state.ws) return;
    for (const line of String(e.data).split("\n")) {
      if (line.trim() === "") continue;
      try {
        handle(JSON.parse(line));
      } catch (err) {
        console.error("bad frame", line, err);
      }
    }
  };
  ws.onclose = (e) => {
    if (ws !== state.ws) return;
    state.ws = null;
    state.offerToken = opened || !offered;
    if (e.code === 4001) {
      setStatus("needs a token", "down");
      showError("reading this chat needs a token");
      return;
    }
    if (e.code === 4002) {
      // The platform token expired unrefreshed: read on without it until
      // the embedding site hands over a fresh one.
      sessionStorage.removeItem("chat.token");
      state.me = null;
      $("who").textContent = "";
      moderation.setRole(null);
      showError("your session expired; sign in again");
      tellEmbedder({ type: "chat-token-expired" });
    }
    if (e.code === 4029) {
      setStatus("too many sockets", "down");
      showError("this account has too many sockets open on this server: close another tab, then reload");
      return;
    }
    // Reconnect with since=cursor after an exponential, jittered wait.
    const wait = Math.round(state.backoff * (0.5 + Math.random() / 2));
    state.backoff = Math.min(state.backoff * 2, 30000);
    setStatus("reconnecting in " + Math.ceil(wait / 1000) + " s", "down");
    state.timer = setTimeout(connect, wait);
  };
}

function join(channel) {
  state.channel = channel;
  state.cursor = null;
  clearMessages();
  location.hash = channel;
  if (state.ws) {
    const old = state.ws;
    state.ws = null;
    old.close(1000, "switching channel");
  }
  state.backoff = 500;
  moderation.channelChanged();
  connect();
  showMe(); // the role shown is the one held in this channel
}

$("channel-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const ch = $("channel").value.trim().toLowerCase() || "general";
  join(ch);
});

$("token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const t = $("token").value.trim();
  $("token").value = "";
  useToken(t);
});

// The embedding site hands over a platform token:
// frame.contentWindow.postMessage({type: "chat-token", token}, chatOrigin).
// Only the page's own origin and CHAT_EMBED_ORIGINS are listened to.
window.addEventListener("message", (e) => {
  if (!trustedOrigin(e.origin)) return;
  const d = e.data;
  if (d && d.type === "chat-token" && typeof d.token === "string" && d.token.length <= 8192) useToken(d.token);
});

$("send-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = $("message").value.trim();
  if (!text) return;
  if (!token()) {
    showError("set a token to send");
    return;
  }
  if (!state.ws || state.ws.readyState !== WebSocket.OPEN) {
    showError("not connected; retrying");
    return;
  }
  state.ws.send(JSON.stringify({ type: "send", message: text, id: ++state.reqId }));
});

// The fragment names the channel (#general), or hands over a token
// (#token=... or #channel=general&token=...): a fragment never reaches a
// server, and it is taken out of the address and the history at once.
let initial = decodeURIComponent(location.hash.slice(1)) || "general";
if (/(^|&)token=/.test(location.hash.slice(1))) {
  const p = new URLSearchParams(location.hash.slice(1));
  initial = p.get("channel") || "general";
  sessionStorage.setItem("chat.token", p.get("token"));
  history.replaceState(null, "", location.pathname + location.search + "#" + initial);
}
showMe();
$("channel").value = initial;
join(initial);
