package io.pdconnector.api.openai;

import io.pdconnector.error.InvalidInputException;
import java.util.List;
import java.util.Map;

/**
 * Renders chat messages into the one prompt text the reference engine tokenizes. It is fixed and
 * deterministic because P and D render the same request separately and must get the same tokens
 * (D checks the token count against P's {@code remote_num_tokens}); a real engine's chat template
 * plays this part.
 */
final class ChatTemplate {

    private ChatTemplate() {
    }

    static String render(List<ChatCompletionRequest.Message> messages) {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < messages.size(); i++) {
            ChatCompletionRequest.Message m = messages.get(i);
            text.append("<|").append(m.role().strip()).append("|>\n").append(content(m.content(), i)).append('\n');
        }
        return text.append("<|assistant|>\n").toString();
    }

    /** A string, or OpenAI's list of parts of which only {@code {"type": "text", "text": ...}} has meaning here. */
    private static String content(Object content, int index) {
        if (content == null) {
            return "";
        }
        if (content instanceof String s) {
            return s;
        }
        if (content instanceof List<?> parts) {
            StringBuilder joined = new StringBuilder();
            for (Object part : parts) {
                if (!(part instanceof Map<?, ?> p) || !"text".equals(p.get("type")) || !(p.get("text") instanceof String t)) {
                    throw InvalidInputException.of("messages[" + index
                            + "].content parts must be {\"type\": \"text\", \"text\": \"...\"}");
                }
                joined.append(joined.isEmpty() ? "" : "\n").append(t);
            }
            return joined.toString();
        }
        throw InvalidInputException.of("messages[" + index + "].content must be a string or a list of text parts");
    }
}
