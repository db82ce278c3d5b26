/** Stylesheets are bundled by esbuild into the hashed CSS asset. */
declare module "*.css";
