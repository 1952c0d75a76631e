// The chat's page. Every URL is built relative to the page, so it works at
// / and behind a proxy prefix such as /chat/. The REST calls and the socket
// (reconnection, recovery with since=, token renewal) are client.js's, the
// chat's browser client, loaded as a module; this script is the page.
"use strict";

const $ = (id) => document.getElementById(id);

// lib is client.js (ChatClient, messageId...), once loaded.
const lib = import("./client.js");

const state = {
  channel: "general",
  chat: null, // the ChatClient, with the page's token
  sub: null, // the channel's Subscription
  byId: new Map(), // message id -> <li> (null once deleted)
  msgs: new Map(), // message id -> the message shown (moderation.js acts on it)
  me: null, // {id, name, role}: the signed-in user, role held in this channel
  pending: [], // the sender's own held messages: {li, text}
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
// JSON (null when empty); a refusal throws the client's ChatError, whose
// message is the server's (apierr's, never internal detail). path is
// under api/v1/ and may carry its query.
async function api(method, path, body) {
  await lib;
  return state.chat.request(method, "api/v1/" + path, { body });
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
// in, or a platform token handed over by the embedding site. The client
// hands it to the open socket (a refresh frame when a platform token
// renews one, else auth).
async function useToken(t) {
  if (t) sessionStorage.setItem("chat.token", t);
  else sessionStorage.removeItem("chat.token");
  await lib;
  state.chat.setToken(t);
  showMe();
}

// refreshToken is the client's callback for a fresh token. The embedding
// site posts fresh platform tokens when it has them (useToken), so before
// exp there is nothing to ask; after a 4002 the page reads on without the
// token until the embedding site hands over a fresh one.
function refreshToken(reason) {
  if (reason !== "expired") return null;
  sessionStorage.removeItem("chat.token");
  state.me = null;
  $("who").textContent = "";
  moderation.setRole(null);
  showError("your session expired; sign in again");
  tellEmbedder({ type: "chat-token-expired" });
  return null;
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
  const { messageId } = await lib;
  const id = messageId(lastId);
  if (id === 0) return;
  try {
    const body = await state.chat.messages(state.channel, { limit: 100, before: id + 1 });
    for (const m of body.messages || []) {
      if (!state.byId.has(m.id)) render(m);
    }
  } catch (e) {
    showError("could not load history: " + e.message);
  }
}

// handle shows one server object: the subscription's events, and the
// answers to the page's sends.
function handle(ev) {
  switch (ev.type) {
    case "hello":
      state.signedIn = !!ev.user;
      if (!ev.recovered) {
        clearMessages();
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

// status shows the subscription's state, and why it stopped.
function status(st, detail) {
  switch (st) {
    case "live":
      setStatus("live", "live");
      break;
    case "reconnecting":
      setStatus("reconnecting in " + Math.ceil(detail.wait / 1000) + " s", "down");
      break;
    case "stopped":
      if (detail.code === 4001) {
        setStatus("needs a token", "down");
        showError("reading this chat needs a token");
      } else if (detail.code === 4029) {
        setStatus("too many sockets", "down");
        showError("this account has too many sockets open on this server: close another tab, then reload");
      } else {
        setStatus("disconnected", "down");
        showError(detail.reason || "disconnected");
      }
      break;
    default:
      setStatus("connecting");
  }
}

async function join(channel) {
  state.channel = channel;
  clearMessages();
  location.hash = channel;
  await lib;
  if (state.sub) state.sub.close();
  moderation.channelChanged();
  state.sub = state.chat.subscribe(channel, { onEvent: handle, onStatus: status });
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
  if (!state.sub || !state.sub.live) {
    showError("not connected; retrying");
    return;
  }
  state.sub.send(text).then(handle, (err) => {
    showError(err.message + (err.retryAfter ? " (retry in " + err.retryAfter + " s)" : ""));
  });
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
$("channel").value = initial;
lib.then(
  (m) => {
    state.chat = new m.ChatClient({ token: token(), refreshToken });
    showMe();
    join(initial);
  },
  (e) => showError("could not load the chat client: " + e.message),
);
