// The embed: one channel in an iframe on a streamer's own site
// (/embed/{channel}), or, with ?overlay=1, an overlay for OBS's browser
// source: transparent, no input, each message fading out after ?fade=
// seconds (default 30, 1..3600). The embedding site hands over a platform
// token by postMessage, as it does to the page:
//   frame.contentWindow.postMessage({type: "chat-token", token}, chatOrigin)
// Only this page's own origin and CHAT_EMBED_ORIGINS are listened to.
import { ChatClient } from "../client.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const overlay = params.get("overlay") === "1";
const fadeSeconds = Math.min(Math.max(Number(params.get("fade")) || 30, 1), 3600);
const channel = decodeURIComponent(location.pathname.split("/").pop() || "general");
const embedOrigins = (document.querySelector('meta[name="chat-embed-origins"]')?.content || "").split(/\s+/).filter(Boolean);
// At most this many messages stay in the list.
const keep = 200;

if (overlay) {
  document.documentElement.classList.add("overlay");
  $("send-form").remove();
}

const chat = new ChatClient({
  base: new URL("..", location.href),
  token: sessionStorage.getItem("chat.token") || "",
  // Fresh tokens come from the embedding site (postMessage); after a
  // 4002 the embed reads on without one and says so.
  refreshToken: (reason) => {
    if (reason === "expired") {
      sessionStorage.removeItem("chat.token");
      tellEmbedder({ type: "chat-token-expired" });
    }
    return null;
  },
});

function tellEmbedder(msg) {
  if (window.parent === window) return;
  for (const o of embedOrigins) window.parent.postMessage(msg, o);
}

const shown = new Set();

function add(li, id) {
  const list = $("messages");
  list.append(li);
  while (list.children.length > keep) list.firstElementChild.remove();
  if (id !== undefined) shown.add(id);
  list.scrollTop = list.scrollHeight;
  if (overlay) {
    // The fade is a class toggled by a timer, not an inline style: the
    // page's Content-Security-Policy allows no inline style.
    setTimeout(() => li.classList.add("fading"), (fadeSeconds - 1) * 1000);
    setTimeout(() => li.remove(), fadeSeconds * 1000);
  }
}

function render(m) {
  if (m.deleted) {
    $("messages").querySelector('li[data-id="' + Number(m.id) + '"]')?.remove();
    return;
  }
  if (shown.has(m.id)) return;
  const li = document.createElement("li");
  li.dataset.id = String(m.id);
  if (m.bot) li.classList.add("bot");
  const user = document.createElement("span");
  user.className = "user";
  user.textContent = m.user.name;
  const text = document.createElement("span");
  text.className = "text";
  text.textContent = m.text;
  li.append(user, text);
  add(li, m.id);
}

function handle(ev) {
  switch (ev.type) {
    case "hello":
      if (ev.user) tellEmbedder({ type: "chat-signed-in", user: ev.user });
      // The overlay shows what is said from now on; the embed, the recent past.
      if (!ev.recovered && !overlay) history(ev.last_id);
      break;
    case "ack":
      if (ev.user) tellEmbedder({ type: "chat-signed-in", user: ev.user });
      break;
    case "message":
    case "message_deleted":
      render(ev.message);
      break;
    case "error":
      $("error").textContent = ev.message || "";
      break;
  }
}

async function history(lastId) {
  const id = parseInt(String(lastId).split(/[-.]/)[0], 10) || 0;
  if (!id) return;
  try {
    const page = await chat.messages(channel, { limit: 50, before: id + 1 });
    for (const m of page.messages) render(m);
  } catch (e) {
    $("error").textContent = "could not load history: " + e.message;
  }
}

const sub = chat.subscribe(channel, { onEvent: handle });

window.addEventListener("message", (e) => {
  if (e.origin !== location.origin && !embedOrigins.includes(e.origin)) return;
  const d = e.data;
  if (d && d.type === "chat-token" && typeof d.token === "string" && d.token.length <= 8192) {
    sessionStorage.setItem("chat.token", d.token);
    chat.setToken(d.token);
  }
});

if (!overlay) {
  $("send-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = $("message").value.trim();
    if (!text) return;
    sub.send(text).then(
      () => {
        $("message").value = "";
        $("error").textContent = "";
      },
      (err) => {
        $("error").textContent = err.message;
      },
    );
  });
}
