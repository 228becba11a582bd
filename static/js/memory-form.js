// The add and edit memory pages: show the fields the chosen type uses, and preview a chosen image before upload.
// No inline script (the CSP blocks it): the form opts in with data-memory-form, and carries per type the fields
// only that type shows (memories.types, through json_script as #memory-type-fields); the others apply to every type.
(function () {
  "use strict";

  function typeFields(form) {
    var data = form.querySelector("#memory-type-fields");
    return data ? JSON.parse(data.textContent) : {};
  }

  function hasValue(wrapper) {
    var input = wrapper.querySelector("input, textarea, select");
    return input && input.type !== "file" && input.value.trim() !== "";
  }

  function syncType(form, byType) {
    var select = form.querySelector("select[name=memory_type]");
    if (!select) return;
    var own = byType[select.value] || [];
    var typed = {};
    Object.keys(byType).forEach(function (type) {
      byType[type].forEach(function (name) { typed[name] = true; });
    });
    form.querySelectorAll("[data-field]").forEach(function (wrapper) {
      var name = wrapper.dataset.field;
      // A field another type uses stays visible when it holds something, so nothing typed is hidden.
      wrapper.hidden = Boolean(typed[name]) && own.indexOf(name) < 0 && !hasValue(wrapper);
    });
    var preview = form.querySelector("[data-file-preview]");
    if (preview && own.indexOf("file") < 0) preview.hidden = true;
  }

  function showPreview(form, input) {
    var preview = form.querySelector("[data-file-preview]");
    if (!preview) return;
    var file = input.files && input.files[0];
    var image = preview.querySelector("img");
    var caption = preview.querySelector("figcaption");
    if (!file) {
      preview.hidden = true;
      return;
    }
    caption.textContent = file.name + " · " + Math.max(1, Math.round(file.size / 1024)) + " KB";
    image.hidden = true;
    preview.hidden = false;
    if (file.type.indexOf("image/") !== 0) return;
    // A data: URL, which the CSP's img-src allows (blob: it does not).
    var reader = new FileReader();
    reader.onload = function () {
      image.src = reader.result;
      image.hidden = false;
    };
    reader.readAsDataURL(file);
  }

  function init(form) {
    var byType = typeFields(form);
    var select = form.querySelector("select[name=memory_type]");
    if (select) select.addEventListener("change", function () { syncType(form, byType); });
    var input = form.querySelector("input[type=file]");
    if (input) input.addEventListener("change", function () { showPreview(form, input); });
    syncType(form, byType);
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-memory-form]").forEach(init);
  });
})();
