/*
 * Tables on a phone (issue 35 item 3): each data table in a page gets .stacks and every cell a data-label naming
 * its column, so app.css can show a row as a card of "Column: value" lines below 760 px instead of a table that
 * scrolls sideways with no cue. Without this file the tables scroll inside their own box, as before.
 *
 * Left alone: tables with their own narrow layout (.memory-table's, Review's), Markdown in a document, and tables
 * marked data-keep-table. Runs on load and on every htmx swap (htmx.onLoad). CSP: a file from 'self'.
 */
(function () {
  "use strict";

  const SKIP = ".memory-table table, table.review, .markdown-body table, table[data-keep-table]";

  function label(table) {
    if (table.matches(SKIP) || !table.tHead) return;
    const headers = Array.from(table.tHead.rows[0]?.cells || []).map(function (cell) {
      return cell.textContent.trim();
    });
    table.classList.add("stacks");
    Array.from(table.tBodies).forEach(function (body) {
      Array.from(body.rows).forEach(function (row) {
        let column = 0;
        Array.from(row.cells).forEach(function (cell) {
          const name = headers[column];
          if (name && !cell.hasAttribute("data-label") && cell.colSpan === 1) cell.dataset.label = name;
          column += cell.colSpan;
        });
      });
    });
  }

  function labelAll(root) {
    const scope = root.querySelectorAll ? root : document;
    if (scope.matches && scope.matches("table")) label(scope);
    scope.querySelectorAll("main table").forEach(label);
    // A swapped-in row (a key revoked, a question edited) belongs to a table labelled before.
    const table = scope.closest && scope.closest("main table");
    if (table) label(table);
  }

  if (window.htmx) window.htmx.onLoad(labelAll);
  else document.addEventListener("DOMContentLoaded", function () { labelAll(document); });
})();
