import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App";
// The app's own font, bundled: the desktop window's WebKit otherwise falls
// back to whatever fontconfig finds (a serif on a bare machine).
import "@fontsource-variable/inter";
import "./styles.css";

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
