// Small behaviours without inline scripts (the Content-Security-Policy forbids them).
(function () {
  "use strict";

  // Destructive buttons ask first.
  document.addEventListener("click", function (event) {
    var target = event.target.closest("[data-confirm]");
    if (target && !window.confirm(target.getAttribute("data-confirm"))) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  }, true);

  // One loading indicator for every HTMX request.
  var pending = 0;
  function setLoading(delta) {
    pending = Math.max(0, pending + delta);
    document.body.classList.toggle("is-loading", pending > 0);
    document.body.setAttribute("aria-busy", pending > 0 ? "true" : "false");
  }
  document.addEventListener("htmx:beforeRequest", function () { setLoading(1); });
  document.addEventListener("htmx:afterRequest", function () { setLoading(-1); });

  // After a swap, focus moves to the new content (its first heading or the region itself), so
  // keyboard and screen-reader users land on the results instead of at the top of the page.
  // Only regions that ask for it (data-focus-on-swap): a poll or a search-as-you-type must not
  // pull focus away from where the operator is.
  document.addEventListener("htmx:afterSettle", function (event) {
    var region = event.detail.elt;
    if (!region || !region.isConnected || !region.hasAttribute("data-focus-on-swap")) { return; }
    if (typing(document.activeElement) && document.activeElement.type === "search") { return; }
    if (!region.hasAttribute("tabindex")) { region.setAttribute("tabindex", "-1"); }
    region.focus({preventScroll: false});
  });

  // Copy buttons: data-copy="id of the element whose text to copy".
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) { return; }
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) { return; }
    var text = source.textContent.trim();
    var done = function () { button.textContent = "Copied"; };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { selectText(source); });
    } else {
      selectText(source);
      try { document.execCommand("copy"); done(); } catch (e) { /* the text stays selected */ }
    }
  });
  function selectText(node) {
    var range = document.createRange();
    range.selectNodeContents(node);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  // Toggles: the narrow-screen menu and filter drawers (data-toggle="id").
  document.addEventListener("click", function (event) {
    var button = event.target.closest(".nav-toggle, [data-toggle]");
    if (!button) { return; }
    var target = document.getElementById(button.getAttribute("aria-controls") || button.getAttribute("data-toggle"));
    if (!target) { return; }
    var open = !target.classList.contains("open");
    target.classList.toggle("open", open);
    button.setAttribute("aria-expanded", open ? "true" : "false");
  });

  // Keyboard shortcuts: / search, j/k rows, e edit, ? help.
  function typing(el) {
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }
  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-row]"));
  }
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(document.activeElement)) { return; }
    var key = event.key;
    if (key === "/") {
      var search = document.querySelector("[data-search], input[type=search]");
      if (search) { event.preventDefault(); search.focus(); search.select(); }
    } else if (key === "j" || key === "k") {
      var list = rows();
      if (!list.length) { return; }
      var current = list.indexOf(document.activeElement.closest("[data-row]"));
      var next = current < 0 ? 0 : Math.min(list.length - 1, Math.max(0, current + (key === "j" ? 1 : -1)));
      list.forEach(function (row) { row.classList.remove("row-current"); });
      list[next].classList.add("row-current");
      var link = list[next].querySelector("a[href]") || list[next];
      if (!link.hasAttribute("tabindex") && link === list[next]) { link.setAttribute("tabindex", "-1"); }
      link.focus();
      event.preventDefault();
    } else if (key === "e") {
      var row = document.activeElement.closest("[data-row]");
      var edit = (row && row.querySelector("[data-edit]")) || document.querySelector("[data-shortcut-edit]");
      if (edit) { event.preventDefault(); edit.click(); }
    } else if (key === "?") {
      var help = document.getElementById("shortcuts");
      if (help && help.showModal) { event.preventDefault(); help.showModal(); }
    }
  });
})();

// "Select every row on this page" in lists with row checkboxes.
document.addEventListener("change", function (event) {
  var all = event.target.closest("[data-select-all]");
  if (!all) { return; }
  document.querySelectorAll("[data-select-row]").forEach(function (box) { box.checked = all.checked; });
});

// On a phone a table's rows become cards and its header row is hidden (app.css): each cell carries its
// column's name (data-label, shown before the value) so a card still says what each number is.
(function () {
  function labelCells() {
    document.querySelectorAll("table.table").forEach(function (table) {
      var heads = Array.prototype.map.call(table.querySelectorAll("thead th"), function (th) {
        return th.textContent.trim();
      });
      if (!heads.length) { return; }
      table.querySelectorAll("tbody tr").forEach(function (tr) {
        Array.prototype.forEach.call(tr.children, function (cell, i) {
          if (heads[i] && !cell.hasAttribute("data-label") && !cell.hasAttribute("colspan")) {
            cell.setAttribute("data-label", heads[i]);
          }
        });
      });
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", labelCells);
  } else {
    labelCells();
  }
  document.addEventListener("htmx:afterSettle", labelCells);
})();
