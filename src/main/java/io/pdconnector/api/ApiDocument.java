package io.pdconnector.api;

import jakarta.ws.rs.core.Application;
import org.eclipse.microprofile.openapi.annotations.enums.SecuritySchemeType;
import org.eclipse.microprofile.openapi.annotations.security.SecurityScheme;

/**
 * The API as a whole, for its OpenAPI document: how a client authenticates (a bearer token of a role).
 * SmallRye reads a security scheme from the application class; from it and each endpoint's
 * {@code @RolesAllowed}, the document lists the roles every operation takes.
 */
@SecurityScheme(securitySchemeName = ApiDocument.BEARER, type = SecuritySchemeType.HTTP, scheme = "bearer",
        description = "A token of one of the operation's roles (router, engine, peer, operator), as configured in"
                + " pd.auth.tokens.<role>; checked when pd.auth.enabled=true. See docs/security.md, \"Roles\" and \"Tokens\".")
public class ApiDocument extends Application {

    static final String BEARER = "bearer";
}
