// The memory browser: bulk selection (the confirm says how many, and nothing happens with nothing selected),
// "all N matching", the bulk action's value field, and keyboard shortcuts (j/k, x, e, a, o, / and ?).
// Everything is delegated from document, so it keeps working after htmx swaps the table.
(() => {
  // Words come from Django's JavaScript catalogue (base.html loads it first); without it, English.
  const gettext = window.gettext || ((text) => text);
  const ngettext = window.ngettext || ((one, many, n) => (n === 1 ? one : many));
  const interpolate = window.interpolate || ((text, values) => text.replace(/%\((\w+)\)s/g, (_, key) => values[key]));
  const rows = () => [...document.querySelectorAll("#memory-table tr.memory-row")];
  const ticked = () => [...document.querySelectorAll('#memory-table input[name="ids"]:checked')];
  const allMatching = () => document.querySelector('input[name="scope"][value="all"]:checked');
  const plural = (n) =>
    interpolate(ngettext("%(n)s memory", "%(n)s memories", n), { n: n.toLocaleString(document.documentElement.lang || "en") }, true);

  function selectionCount() {
    const form = document.getElementById("bulk-form");
    if (allMatching() && form) return Number(form.dataset.total || 0);
    return ticked().length;
  }

  function refreshSelection() {
    const boxes = document.querySelectorAll('#memory-table input[name="ids"]');
    const all = boxes.length > 0 && ticked().length === boxes.length;
    const head = document.querySelector('#memory-table input[data-select-all="ids"]');
    if (head) head.checked = all;
    const scope = document.querySelector("[data-select-scope]");
    if (scope) {
      scope.hidden = !all;
      if (!all) {
        const box = scope.querySelector('input[name="scope"]');
        if (box) box.checked = false;
      }
    }
    const output = document.querySelector("[data-selection-count]");
    if (output) output.textContent = selectionCount() ? interpolate(gettext("%(memories)s selected"), { memories: plural(selectionCount()) }, true) : "";
  }

  function refreshValueField() {
    const action = document.querySelector('#bulk-form select[name="action"]');
    for (const label of document.querySelectorAll("#bulk-form .bulk-value")) {
      label.hidden = !action || !label.dataset.for.split(" ").includes(action.value);
    }
  }

  function question(form) {
    const action = form.querySelector('select[name="action"]');
    const verb = action.selectedOptions[0]?.textContent.replace("…", "").trim().toLowerCase();
    const n = selectionCount();
    if (action.value === "delete") {
      return interpolate(gettext("Delete %(memories)s for good? You can undo it right after."), { memories: plural(n) }, true);
    }
    const value = form.querySelector(`.bulk-value:not([hidden]) input, .bulk-value:not([hidden]) select`);
    return `${verb[0].toUpperCase()}${verb.slice(1)}${value ? ` ${value.value}` : ""}: ${plural(n)}?`;
  }

  function notice(text) {
    const output = document.querySelector("[data-selection-count]");
    if (output) output.textContent = text;
  }

  // htmx asks before every request; the bulk form's question depends on the selection, so ask here.
  document.addEventListener("htmx:confirm", (event) => {
    const form = event.detail.elt;
    if (!(form instanceof HTMLFormElement) || form.id !== "bulk-form") return;
    event.preventDefault();
    if (!form.querySelector('select[name="action"]').value) return notice(gettext("Choose an action first."));
    if (!selectionCount()) return notice(gettext("Select at least one memory first."));
    if (window.confirm(question(form))) event.detail.issueRequest(true);
  });
  // Without htmx (or before it loads) the same checks guard the plain form post.
  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (form.id !== "bulk-form" || form.hasAttribute("hx-post") && window.htmx) return;
    if (!selectionCount() || !window.confirm(question(form))) event.preventDefault();
  });

  document.addEventListener("change", (event) => {
    if (event.target.closest?.("#memory-table, #bulk-form")) {
      // select-all.js ticks the boxes on the same event; count after it.
      setTimeout(refreshSelection);
      refreshValueField();
    }
  });
  document.addEventListener("htmx:afterSettle", () => {
    refreshSelection();
    refreshValueField();
    focusRow(Math.min(focused, rows().length - 1), false);
  });
  document.addEventListener("DOMContentLoaded", () => {
    refreshSelection();
    refreshValueField();
  });

  // --- keyboard shortcuts -----------------------------------------------------------------------------------
  let focused = -1;

  function focusRow(index, scroll = true) {
    const all = rows();
    for (const row of all) row.classList.remove("is-focused");
    focused = index;
    const row = all[index];
    if (!row) return;
    row.classList.add("is-focused");
    if (scroll) row.scrollIntoView({ block: "nearest" });
  }

  function typing(target) {
    return target.closest?.("input, textarea, select, [contenteditable]") && target.type !== "checkbox";
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    if (!document.getElementById("memory-table")) return;
    const help = document.getElementById("shortcut-help");
    if (help?.open && event.key !== "?") return;
    const row = rows()[focused];
    const actions = {
      j: () => focusRow(Math.min(focused + 1, rows().length - 1)),
      k: () => focusRow(Math.max(focused - 1, 0)),
      x: () => row?.querySelector('input[name="ids"]')?.click(),
      e: () => row?.querySelector('a[href$="/edit/"]')?.click(),
      o: () => row?.querySelector('a[href$="/"]:not([href$="/edit/"])')?.click(),
      a: () =>
        row
          ?.querySelector('form[action$="/archive/"], form[action$="/restore/"]')
          ?.querySelector("button")
          ?.click(),
      "/": () => document.querySelector('#memory-filters input[name="q"]')?.focus(),
      "?": () => (help?.open ? help.close() : help?.showModal()),
    };
    const act = actions[event.key];
    if (!act) return;
    event.preventDefault();
    act();
  });

  document.addEventListener("click", (event) => {
    if (event.target.closest?.("[data-shortcut-help]")) document.getElementById("shortcut-help")?.showModal();
  });
})();
