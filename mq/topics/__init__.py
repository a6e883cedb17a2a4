"""Topic administration: every operation on a tenant's topics but the data plane (`mq.topics.service.TopicAdmin`)."""
