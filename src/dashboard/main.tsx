/** The dashboard's entry point: signed out, the sign-in screen; signed in, the shell. */
import { render } from "preact";
import "./styles.css";
import { Shell } from "./shell.js";
import { SignIn } from "./screens/sign-in.js";
import { sessionLost, shellEpoch, signedIn } from "./state.js";

function App() {
  const live = signedIn.value;
  if (!live && !sessionLost.value) return <SignIn />;
  // The same tree signed in and after the session ended under an open page:
  // then sign-in is asked for over the page, which stays mounted (and inert)
  // so that no typed input is lost.
  return (
    <>
      <div class="app" key={shellEpoch.value} inert={!live}>
        <Shell />
      </div>
      {!live && <SignIn over />}
    </>
  );
}

render(<App />, document.getElementById("app")!);
