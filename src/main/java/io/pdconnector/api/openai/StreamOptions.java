package io.pdconnector.api.openai;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;

/** OpenAI's {@code stream_options}: {@code include_usage} adds a last chunk with the usage and no choices. */
@JsonIgnoreProperties(ignoreUnknown = true)
public record StreamOptions(@JsonProperty("include_usage") Boolean includeUsage) {
}
