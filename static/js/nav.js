/*
 * The main navigation on narrow screens (templates/base.html): the links collapse behind a Menu button.
 *
 * Without this file the links simply stay listed. With it, the header gets .has-nav-toggle, which app.css
 * collapses below 760 px until the button opens the menu. CSP: a file from 'self', no inline handlers.
 */
(function () {
  "use strict";

  const header = document.querySelector(".topbar");
  const button = header && header.querySelector(".nav-toggle");
  const nav = document.getElementById("main-nav");
  if (!button || !nav) return;

  function setOpen(open) {
    button.setAttribute("aria-expanded", String(open));
    nav.classList.toggle("is-open", open);
  }

  header.classList.add("has-nav-toggle");
  button.hidden = false;
  button.addEventListener("click", function () {
    setOpen(button.getAttribute("aria-expanded") !== "true");
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && button.getAttribute("aria-expanded") === "true") {
      setOpen(false);
      button.focus();
    }
  });
})();
