// A dialog that holds the keyboard until it closes: the page behind it is
// made inert (no focus, no clicks, hidden from screen readers), focus moves
// into it and comes back to where it was, Esc and a click outside close it.
// The `inert` attribute does what a hand-written focus trap would, in the
// browser itself; the dialog is portalled out of #root so it is not inert too.
import { useEffect, useRef, type ReactNode } from "react";
import { createPortal } from "react-dom";

/** Open dialogs, the newest last: the page stays inert until the last one closes, and Esc closes the newest only. */
const open: object[] = [];

/** Where focus goes back to: the element that had it, if it still can take it; else the screen's heading. */
function refocus(before: HTMLElement | null) {
  const usable =
    before?.isConnected && !before.closest("[inert]") && !(before as HTMLButtonElement).disabled ? before : null;
  const fallback = document.querySelector<HTMLElement>("main h2");
  if (!usable && fallback) fallback.tabIndex = -1;
  (usable ?? fallback)?.focus();
}

const FOCUSABLE = "[autofocus], button:not([disabled]), [href], input, select, textarea, [tabindex]:not([tabindex='-1'])";

export function Modal({
  label,
  onClose,
  children,
  className = "modal",
  backdrop = "modal-backdrop",
  testId,
}: {
  /** What the dialog is, for a screen reader ("keyboard shortcuts"). */
  label: string;
  onClose: () => void;
  children: ReactNode;
  /** The dialog box's class ("modal", "drawer"). */
  className?: string;
  /** The backdrop's class: dimmed for a modal, clear for a drawer. */
  backdrop?: string;
  testId?: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  // The latest onClose, without re-running the effect (and moving focus)
  // each time a parent renders a new function.
  const close = useRef(onClose);
  close.current = onClose;

  useEffect(() => {
    const root = document.getElementById("root");
    const before = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    const me = {};
    open.push(me);
    root?.setAttribute("inert", "");
    const first = box.current?.querySelector<HTMLElement>(FOCUSABLE);
    (first ?? box.current)?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape" && open[open.length - 1] === me) close.current();
    };
    window.addEventListener("keydown", onKey);
    return () => {
      window.removeEventListener("keydown", onKey);
      open.splice(open.indexOf(me), 1);
      if (open.length === 0) root?.removeAttribute("inert");
      refocus(before);
    };
  }, []);

  return createPortal(
    <div className={backdrop} onClick={(e) => e.target === e.currentTarget && close.current()}>
      <div ref={box} className={className} role="dialog" aria-modal="true" aria-label={label} tabIndex={-1} data-testid={testId}>
        {children}
      </div>
    </div>,
    document.body,
  );
}
