package io.pdconnector.api.problem;

/** An answer that is a problem by design (unknown request, declined pull), thrown by resources. */
public final class ProblemException extends RuntimeException {

    private final transient Problem problem;

    public ProblemException(Problem problem) {
        super(problem.detail());
        this.problem = problem;
    }

    public Problem problem() {
        return problem;
    }

    public static ProblemException notFound(String what, String id) {
        return new ProblemException(Problem.of(404, "unknown-request", "Unknown request",
                "no " + what + " request with id " + id + " is held here").forRequest(id));
    }

    public static ProblemException roleNotServed(String role) {
        return new ProblemException(Problem.of(404, "role-not-served", "Role not served",
                "this instance does not run the " + role + " role (pd.role)"));
    }
}
