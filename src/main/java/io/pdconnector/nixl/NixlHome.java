package io.pdconnector.nixl;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The unpacked NIXL wheel: where its C API library and plugins are. Checked once, so that a wrong
 * {@code pd.nixl.home} fails at start-up with the path that is missing instead of a dlopen error.
 */
public record NixlHome(Path root) {

    private static final String LIBS = ".nixl_cu12.mesonpy.libs";

    public static NixlHome at(Path root) {
        NixlHome home = new NixlHome(root.toAbsolutePath().normalize());
        for (Path required : new Path[] {home.capiLibrary(), home.pluginDir().resolve("libplugin_UCX.so")}) {
            if (!Files.isRegularFile(required)) {
                throw new NixlUnavailableException("NIXL home " + home.root + " has no " + required
                        + "; run scripts/fetch-nixl.sh or point pd.nixl.home at an unpacked nixl-cu12 wheel");
            }
        }
        return home;
    }

    public Path libDir() {
        return root.resolve(LIBS);
    }

    public Path capiLibrary() {
        return libDir().resolve("libnixl_capi.so");
    }

    public Path pluginDir() {
        return libDir().resolve("plugins");
    }

    /** UCX's transport modules as the wheel bundles them (auditwheel's folder; libucs finds them beside itself). */
    public Path ucxModuleDir() {
        return root.resolve("nixl_cu12.libs").resolve("ucx");
    }
}
