/*
 * The chat page (agents/templates/agents/chat_session.html): send a message and show the answer as it streams.
 *
 * The form works without this file (it POSTs to chat_send and the page reloads with the answer). Here it is
 * posted with fetch to its data-stream-url instead, whose text/event-stream body is read as it arrives:
 *   event: delta  {"text"}         a piece of the answer, appended as text
 *   event: tool   {"name", "ok"}   a tool call the agent made
 *   event: done   {"id", "html"}   the finished message, rendered by the server: it replaces the streaming bubble
 *   event: error  {"message"}      the turn failed after the response had started
 *
 * CSP: loaded with the page's nonce; no inline styles or handlers. Model and user text reach the DOM only through
 * textContent; the one HTML insertion is the server-rendered (escaped) message of the done event.
 */
(function () {
  "use strict";
  // Words come from Django's JavaScript catalogue (base.html loads it first); without it, English.
  const gettext = window.gettext || ((text) => text);
  const ngettext = window.ngettext || ((one, many, n) => (n === 1 ? one : many));
  const interpolate = window.interpolate || ((text, values) => text.replace(/%\((\w+)\)s/g, (_, key) => values[key]));

  const form = document.getElementById("chat-form");
  const log = document.getElementById("chat-log");
  const GAP = 12; // px between a message and the composer (or the top of the window)

  // Scroll the window so a message is in view and not under the composer, which is sticky at the bottom of
  // the window: its end just above the composer, or its start at the top when it is taller than the room left.
  // Nothing moves when it is already in view, so a reader scrolled back up is not yanked down needlessly.
  function reveal(item) {
    if (!item) return;
    const cover = form ? form.offsetHeight : 0;
    const room = window.innerHeight - cover - GAP;
    const rect = item.getBoundingClientRect();
    if (rect.top >= 0 && rect.bottom <= room) return;
    const delta = rect.height > room - GAP ? rect.top - GAP : rect.bottom - room;
    window.scrollBy({ top: delta, left: 0, behavior: "instant" });
  }

  function lastMessage() {
    return log ? log.querySelector(".chat-message:last-of-type") : null;
  }

  // Opening a session shows its newest message, unless the address names another one (#message-…).
  if (log) {
    const named = window.location.hash ? document.getElementById(window.location.hash.slice(1)) : null;
    if (!named || named === lastMessage()) {
      if ("scrollRestoration" in window.history) window.history.scrollRestoration = "manual";
      reveal(lastMessage());
    }
  }

  if (!form || !log || !window.fetch || !window.ReadableStream || !window.TextDecoder) {
    return; // the plain form post still works
  }
  const textarea = form.elements.text;
  const button = form.querySelector("button[type=submit]");
  const status = document.getElementById("chat-status");

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text) node.textContent = text;
    return node;
  }

  function bubble(role) {
    const item = element("li", "chat-message " + role);
    const box = element("div", "bubble");
    if (role === "assistant") {
      const head = element("div", "bubble-head");
      head.append(element("span", "who", "Mnemo"), element("span", "muted small stream-state", gettext("thinking…")));
      box.append(head);
    }
    box.append(element("div", "bubble-text"));
    item.append(box);
    log.querySelector(".chat-empty")?.remove();
    log.append(item);
    return item;
  }

  function fromHTML(html) {
    const template = document.createElement("template");
    template.innerHTML = html.trim();
    return template.content.firstElementChild;
  }

  function say(text) {
    if (status) status.textContent = text;
  }

  function fail(item, message) {
    item.classList.add("has-error");
    item.querySelector(".stream-state")?.remove();
    item.querySelector(".bubble").append(element("p", "chat-error", message));
    item.querySelector(".chat-error").setAttribute("role", "alert");
    say("");
  }

  // Split the body into SSE events ("event: x\ndata: y\n\n") as its chunks arrive; call onEvent(name, payload).
  async function readEvents(body, onEvent) {
    const reader = body.getReader();
    const decoder = new TextDecoder("utf-8");
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
      buffer = buffer.replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let name = "message";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) name = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (data.length) onEvent(name, JSON.parse(data.join("\n")));
      }
      if (done) return;
    }
  }

  // A new session is named by its first message (the server does the same on the next page load).
  function nameSession(text) {
    const name = text.length > 80 ? text.slice(0, 79) + "…" : text;
    const heading = document.getElementById("chat-heading");
    if (heading) heading.textContent = name;
    const link = document.querySelector(".chat-session-links a[aria-current=page]");
    if (link) link.textContent = name.length > 48 ? name.slice(0, 47) + "…" : name;
  }

  async function send(text) {
    const data = new FormData(form);
    data.set("text", text);
    if (log.querySelector(".chat-empty")) nameSession(text);
    const mine = bubble("user");
    mine.querySelector(".bubble-text").textContent = text;
    const answer = bubble("assistant");
    answer.classList.add("is-streaming");
    answer.querySelector(".bubble").append(element("ul", "stream-tools"));
    reveal(answer);
    say(gettext("Mnemo is answering…"));

    try {
      await stream(data, answer);
    } catch (error) {
      fail(answer, gettext("The connection failed. Check that the server is running, then try again."));
    }
  }

  async function stream(data, answer) {
    const answerText = answer.querySelector(".bubble-text");
    const tools = answer.querySelector(".stream-tools");
    const response = await fetch(form.dataset.streamUrl, {
      method: "POST",
      body: data,
      credentials: "same-origin",
      headers: { Accept: "text/event-stream", "X-CSRFToken": data.get("csrfmiddlewaretoken") },
    });
    const type = response.headers.get("Content-Type") || "";
    if (response.redirected || !type.startsWith("text/event-stream")) {
      // A redirect here is the login page: the login expired while the page was open.
      const reason = response.redirected ? "" : (await response.text()).trim();
      fail(answer, response.redirected ? gettext("You are logged out: reload the page and log in again.")
        : reason && reason.length < 300 ? reason
        : interpolate(gettext("The server answered %(status)s."), { status: response.status }, true));
      return;
    }
    let finished = false;
    await readEvents(response.body, function (name, payload) {
      if (name === "delta") {
        answer.querySelector(".stream-state")?.remove();
        answerText.textContent += payload.text;
        reveal(answer); // follow the answer as it grows, until it is taller than the window
      } else if (name === "tool") {
        tools.append(element("li", payload.ok ? "" : "bad", "⚙ " + payload.name + (payload.ok ? " ✓" : " ✗ " + gettext("failed"))));
      } else if (name === "done") {
        const rendered = fromHTML(payload.html);
        answer.replaceWith(rendered);
        if (window.htmx) window.htmx.process(rendered); // its Undo buttons are htmx forms
        reveal(rendered);
        finished = true;
        say(rendered.classList.contains("has-error") ? gettext("The language model failed.") : gettext("Answer ready."));
      } else if (name === "error") {
        fail(answer, payload.message);
        finished = true;
      }
    });
    if (!finished) fail(answer, gettext("The answer was cut off. Reload the page to see what was saved."));
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    const text = textarea.value.trim();
    if (!text || button.disabled) return;
    textarea.value = "";
    button.disabled = true;
    form.setAttribute("aria-busy", "true");
    send(text).finally(function () {
      button.disabled = false;
      form.removeAttribute("aria-busy");
      textarea.focus();
    });
  });

  // Enter sends, Shift+Enter adds a line; never while an input method (Chinese, Japanese…) is composing.
  textarea.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing && event.keyCode !== 229) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
})();
