// Skillgate console: local times, a confirmation before a rollback, no double submits.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  const format = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
  for (const el of document.querySelectorAll("time[datetime]")) {
    const moment = new Date(el.getAttribute("datetime"));
    if (!Number.isNaN(moment.getTime())) {
      el.textContent = format.format(moment);
    }
  }

  for (const form of document.querySelectorAll("form")) {
    form.addEventListener("submit", (event) => {
      const question = form.dataset.confirm;
      if (question && !window.confirm(question)) {
        event.preventDefault();
        return;
      }
      // Disabled after this tick, so the submission itself still goes out.
      setTimeout(() => {
        for (const button of form.querySelectorAll("button")) {
          button.disabled = true;
        }
      }, 0);
    });
  }
});
