// A dialog that holds the keyboard until it closes: the page behind it is
// made inert (no focus, no clicks, hidden from screen readers), focus moves
// into it and comes back to where it was, Esc and a click outside close it.
// The `inert` attribute does what a hand-written focus trap would, in the
// browser itself; the dialog is portalled out of #root so it is not inert too.
import { useEffect, useRef, type ReactNode } from "react";
import { createPortal } from "react-dom";

/** Open dialogs: the page stays inert until the last one closes. */
let open = 0;

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
    open += 1;
    root?.setAttribute("inert", "");
    const first = box.current?.querySelector<HTMLElement>(FOCUSABLE);
    (first ?? box.current)?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") close.current();
    };
    window.addEventListener("keydown", onKey);
    return () => {
      window.removeEventListener("keydown", onKey);
      open -= 1;
      if (open === 0) root?.removeAttribute("inert");
      before?.focus();
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
