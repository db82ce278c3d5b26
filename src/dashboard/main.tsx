/** The dashboard's entry point: signed out, the sign-in screen; signed in, the shell. */
import { render } from "preact";
import "./styles.css";
import { Shell } from "./shell.js";
import { SignIn } from "./screens/sign-in.js";
import { signedIn } from "./state.js";

function App() {
  return signedIn.value ? <Shell /> : <SignIn />;
}

render(<App />, document.getElementById("app")!);
