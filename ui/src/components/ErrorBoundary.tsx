// A screen that throws while rendering shows what went wrong instead of
// taking the whole window down with it (React unmounts everything above an
// uncaught render error, which in the desktop app is a blank window). The
// navigation stays usable, and moving to another screen (`resetKey`) tries
// again.
import { Component, type ErrorInfo, type ReactNode } from "react";

interface Props {
  children: ReactNode;
  /** Changing it clears a caught error (the route, in the app). */
  resetKey: string;
}

interface State {
  error: Error | null;
  key: string;
}

export class ErrorBoundary extends Component<Props, State> {
  state: State = { error: null, key: this.props.resetKey };

  static getDerivedStateFromError(error: Error): Partial<State> {
    return { error };
  }

  static getDerivedStateFromProps(props: Props, state: State): Partial<State> | null {
    return props.resetKey !== state.key ? { error: null, key: props.resetKey } : null;
  }

  componentDidCatch(error: Error, info: ErrorInfo) {
    console.error("a screen failed to render:", error, info.componentStack);
  }

  render() {
    const { error } = this.state;
    if (!error) return this.props.children;
    return (
      <section className="card error-screen" role="alert" data-testid="screen-error">
        <h2>This screen failed to show</h2>
        <p className="error">{error.message || String(error)}</p>
        <p className="muted">
          The rest of the app still works: pick another screen, or <a href={window.location.hash || "#/"} onClick={() => window.location.reload()}>reload</a>. If
          it happens again, the message above is what to report.
        </p>
      </section>
    );
  }
}
