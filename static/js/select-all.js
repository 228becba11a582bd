// A "select all" checkbox (data-select-all="<name>") ticks every checkbox of that name on the page.
document.addEventListener("change", (event) => {
  const name = event.target.dataset?.selectAll;
  if (!name) return;
  for (const box of document.querySelectorAll(`input[type=checkbox][name="${CSS.escape(name)}"]`)) {
    box.checked = event.target.checked;
  }
});
