/* The book's ledger page: filter the table of every claim by chapter, kind and status.
   Plain JavaScript, no network. The filters start from the page's query string, e.g.
   ledger.html?status=differs&chapter=looped-gd, and write it back as the reader changes them. */
(function () {
  "use strict";
  var FILTERS = ["chapter", "kind", "status", "at paper scale"];

  function cellText(row, index) {
    var cell = row.cells[index];
    return cell ? cell.textContent.trim() : "";
  }

  function setUp(table) {
    var head = table.tHead && table.tHead.rows[0];
    if (!head || !table.tBodies.length) return;
    var names = Array.prototype.map.call(head.cells, function (c) { return c.textContent.trim(); });
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    var query = new URLSearchParams(window.location.search);
    var bar = document.createElement("form");
    bar.className = "companions-ledger-filters";
    bar.setAttribute("role", "search");
    var selects = {};
    FILTERS.forEach(function (name) {
      var index = names.indexOf(name);
      if (index < 0) return;
      var values = [];
      rows.forEach(function (r) {
        var v = cellText(r, index);
        if (values.indexOf(v) < 0) values.push(v);
      });
      values.sort();
      var label = document.createElement("label");
      label.textContent = name + " ";
      var select = document.createElement("select");
      select.name = name;
      select.setAttribute("data-column", String(index));
      [""].concat(values).forEach(function (v) {
        var option = document.createElement("option");
        option.value = v;
        option.textContent = v === "" ? "all" : v;
        select.appendChild(option);
      });
      if (query.get(name) && values.indexOf(query.get(name)) >= 0) select.value = query.get(name);
      label.appendChild(select);
      bar.appendChild(label);
      selects[name] = select;
    });
    var count = document.createElement("span");
    count.className = "companions-ledger-count";
    bar.appendChild(count);

    function apply() {
      var shown = 0;
      rows.forEach(function (r) {
        var ok = Object.keys(selects).every(function (name) {
          var s = selects[name];
          return s.value === "" || cellText(r, Number(s.getAttribute("data-column"))) === s.value;
        });
        r.hidden = !ok;
        if (ok) shown += 1;
      });
      count.textContent = shown + " of " + rows.length + " claims shown";
      var params = new URLSearchParams(window.location.search);
      Object.keys(selects).forEach(function (name) {
        if (selects[name].value) params.set(name, selects[name].value); else params.delete(name);
      });
      var search = params.toString();
      if (window.history && window.history.replaceState) {
        window.history.replaceState(null, "", window.location.pathname + (search ? "?" + search : "") + window.location.hash);
      }
    }
    bar.addEventListener("change", apply);
    bar.addEventListener("submit", function (e) { e.preventDefault(); });
    table.parentNode.insertBefore(bar, table);
    apply();
  }

  function init() {
    Array.prototype.forEach.call(document.querySelectorAll("table.companions-ledger-claims"), setUp);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
